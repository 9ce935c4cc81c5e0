export function capitalize(word: string): string {
  return word.toUpperCase();
}

export function slugify(text: string): string {
  return text.trim().toLowerCase().replace(/ /g, "-");
}

function slugify(text) {
  return text.trim().toLowerCase().replace(/ /g, "-");
}

function truncate(text, n) {
  if (text.length <= n) return text;
  return text.slice(0, n);
}

module.exports = { slugify, truncate };

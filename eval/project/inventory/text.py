def slugify(text):
    return text.strip().lower().replace(" ", "-")


def truncate(text, n):
    if len(text) <= n:
        return text
    return text[:n]


def title_case(text):
    words = text.split()
    out = [words[0]] if words else []
    for word in words[1:]:
        out.append(word.capitalize())
    return " ".join(out)

/// Upper-cases the first letter of each word.
pub fn title_case(s: &str) -> String {
    let mut words: Vec<String> = s.split_whitespace().map(String::from).collect();
    if let Some(first) = words.first_mut() {
        let mut c = first.chars();
        if let Some(f) = c.next() {
            *first = f.to_uppercase().collect::<String>() + c.as_str();
        }
    }
    words.join(" ")
}

//! `page_language`: the languages the built-in pages speak, by their primary
//! subtag. [`crate::pages::page`] holds their texts and chooses one for a visitor.

/// A language the built-in pages speak.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Language {
    /// English, the default.
    #[default]
    En,
    /// German.
    De,
    /// French.
    Fr,
    /// Spanish.
    Es,
    /// Italian.
    It,
    /// Portuguese.
    Pt,
}

impl Language {
    /// Every language, English first.
    pub const ALL: [Language; 6] = [
        Language::En,
        Language::De,
        Language::Fr,
        Language::Es,
        Language::It,
        Language::Pt,
    ];

    /// Its primary language subtag (`de`).
    pub fn code(self) -> &'static str {
        match self {
            Language::En => "en",
            Language::De => "de",
            Language::Fr => "fr",
            Language::Es => "es",
            Language::It => "it",
            Language::Pt => "pt",
        }
    }

    /// The language of a primary subtag, any case.
    pub fn from_code(code: &str) -> Option<Language> {
        Language::ALL
            .into_iter()
            .find(|l| l.code().eq_ignore_ascii_case(code.trim()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_language_is_read_from_its_code_in_any_case() {
        for language in Language::ALL {
            assert_eq!(Language::from_code(language.code()), Some(language));
        }
        assert_eq!(Language::from_code(" FR "), Some(Language::Fr));
        assert_eq!(Language::from_code("auto"), None);
    }
}

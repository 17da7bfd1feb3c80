//! How the findings read text: which characters a reader does not see, and the form phrases
//! are matched in.
//!
//! An upstream that wants a phrase past the rules writes it so that it looks the same to the
//! model and the admin but not to a substring search: a line break or two spaces inside it, a
//! Cyrillic `о` for the Latin `o`, fullwidth letters, a zero-width space between two letters.
//! [`normalized`] undoes each of these (whitespace runs become one space, NFKC, UTS #39
//! confusable skeletons, hidden characters dropped, lower case), one character at a time, so
//! that its cost is linear in the text and a position in it maps back to the text
//! ([`original_offset`]).

use icu_properties::props::{BidiControl, DefaultIgnorableCodePoint, Emoji, GeneralCategory};
use icu_properties::{CodePointMapData, CodePointSetData};
use unicode_normalization::char::decompose_compatible;

/// Variation selectors that choose an emoji's text or colour form: after an emoji, one of them
/// is ordinary text (`⚠️`), not a hidden character.
const EMOJI_SELECTORS: [char; 2] = ['\u{FE0E}', '\u{FE0F}'];

/// Whether `c`, coming after `previous`, is a character a reader does not see: the controls
/// (but tab and line breaks), Default_Ignorable_Code_Point (zero-width characters, variation
/// selectors, Unicode tags, the soft hyphen, the combining grapheme joiner, Hangul fillers),
/// Bidi_Control, the Cf (format) category, and the line and paragraph separators. The one
/// exception is an emoji's presentation selector right after the emoji: it carries a bit per
/// visible emoji at most, where smuggling a text one byte per selector needs them in a row.
pub fn is_hidden_after(previous: Option<char>, c: char) -> bool {
    if c.is_ascii() {
        return matches!(u32::from(c), 0x00..=0x08 | 0x0B | 0x0C | 0x0E..=0x1F | 0x7F);
    }
    if EMOJI_SELECTORS.contains(&c) {
        return !previous
            .is_some_and(|p| !p.is_ascii() && CodePointSetData::new::<Emoji>().contains(p));
    }
    matches!(u32::from(c), 0x80..=0x9F | 0x2028 | 0x2029)
        || CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c)
        || CodePointSetData::new::<BidiControl>().contains(c)
        || CodePointMapData::<GeneralCategory>::new().get(c) == GeneralCategory::Format
}

/// The characters of `text` a reader does not see, with their byte offsets.
pub fn hidden_chars(text: &str) -> impl Iterator<Item = (usize, char)> + '_ {
    let mut previous = None;
    text.char_indices().filter(move |&(_, c)| {
        let hidden = is_hidden_after(previous, c);
        previous = Some(c);
        hidden
    })
}

/// `text` as the phrase rules read it: lower case, hidden characters dropped, every run of
/// white space one space, each other character by its NFKC form and then its confusable
/// skeleton (`іgnоrе` with Cyrillic letters reads `ignore`). Linear in `text`.
pub fn normalized(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    each(text, |_, c| out.push(c));
    out
}

/// The byte offset in `text` of the character that produced byte `at` of
/// [`normalized`]`(text)` (the end of `text` past its end).
pub fn original_offset(text: &str, at: usize) -> usize {
    let mut written = 0;
    let mut found = None;
    each(text, |offset, c| {
        if found.is_none() && written >= at {
            found = Some(offset);
        }
        written += c.len_utf8();
    });
    found.unwrap_or(text.len())
}

/// Calls `emit` with each character of the normalized form and the offset in `text` of the
/// character it comes from.
fn each(text: &str, mut emit: impl FnMut(usize, char)) {
    let mut previous = None;
    let mut in_space = false;
    for (offset, c) in text.char_indices() {
        let hidden = is_hidden_after(previous, c);
        previous = Some(c);
        if hidden {
            continue;
        }
        if c.is_whitespace() {
            if !in_space {
                emit(offset, ' ');
            }
            in_space = true;
            continue;
        }
        in_space = false;
        if c.is_ascii() {
            emit(offset, c.to_ascii_lowercase());
            continue;
        }
        let mut buffer = [0u8; 4];
        decompose_compatible(c, |part| {
            for lower in part.to_lowercase() {
                // ASCII stays itself: the skeleton would also fold ASCII (`m` → `rn`), and the
                // phrases are matched against text whose ASCII is left as it is.
                if lower.is_ascii() {
                    emit(offset, lower);
                    continue;
                }
                for folded in unicode_security::skeleton(lower.encode_utf8(&mut buffer)) {
                    for c in folded.to_lowercase() {
                        emit(offset, c);
                    }
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phrases_hidden_by_spacing_letters_and_invisible_characters_read_plainly() {
        for (text, plain) in [
            ("Do not\ntell  the\tuser", "do not tell the user"),
            ("ign\u{200B}ore previous", "ignore previous"),
            // Cyrillic о and е, fullwidth ｕｓｅｒ.
            (
                "d\u{43E} n\u{43E}t t\u{435}ll the ｕｓｅｒ",
                "do not tell the user",
            ),
            ("$HOME/.SSH", "$home/.ssh"),
        ] {
            assert_eq!(normalized(text), plain, "{text:?}");
        }
    }

    #[test]
    fn offsets_map_back_to_the_text() {
        let text = "Ab\u{200B}  ｃd";
        let plain = normalized(text);
        assert_eq!(plain, "ab cd");
        assert_eq!(
            original_offset(text, plain.find('c').unwrap()),
            text.find('ｃ').unwrap()
        );
        assert_eq!(original_offset(text, plain.len()), text.len());
    }

    #[test]
    fn the_hidden_set_comes_from_unicode_properties() {
        for c in [
            '\u{FE00}',
            '\u{FE0F}',
            '\u{E0100}',
            '\u{E01EF}',
            '\u{061C}',
            '\u{00AD}',
            '\u{034F}',
            '\u{115F}',
            '\u{3164}',
            '\u{FFA0}',
            '\u{180E}',
            '\u{FFF9}',
            '\u{FFFB}',
            '\u{2028}',
            '\u{2029}',
            '\u{200B}',
            '\u{202E}',
            '\u{2066}',
            '\u{E0041}',
            '\u{FEFF}',
            '\u{1B}',
        ] {
            assert!(is_hidden_after(Some('a'), c), "U+{:04X}", u32::from(c));
        }
        for c in ['a', 'é', '\t', '\n', 'ж', '中', '⚠'] {
            assert!(!is_hidden_after(None, c), "U+{:04X}", u32::from(c));
        }
        // An emoji's own presentation selector is text; a second one in a row is not.
        assert!(!is_hidden_after(Some('⚠'), '\u{FE0F}'));
        assert_eq!(hidden_chars("⚠\u{FE0F}\u{FE0F}").count(), 1);
    }
}

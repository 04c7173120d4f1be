//! A 5x7 pixel font (after the HD44780 LCD character set) that turns text into
//! pixel columns, for pattern workloads that spell text in a latency heat map.

/// Rows per glyph.
pub const ROWS: u32 = 7;

/// Characters that have a glyph, for error messages.
pub const SUPPORTED: &str = "A-Z, 0-9, space and . , ! ? - : ' / + = ( ) _";

/// Glyph width in columns (a blank column follows each glyph).
pub const WIDTH: usize = 5;

/// A glyph of this font's shape made from 7 rows of '#' (lit) and '.' (blank), top row
/// first, as 5 column bytes like [`render`]'s: for other pictures drawn in the same font
/// (the plot's lower case). Evaluated at compile time in a `const`, a malformed row fails
/// the build.
pub const fn from_rows(rows: [&str; ROWS as usize]) -> [u8; WIDTH] {
    g(rows)
}

/// Converts 7 row strings ('#' lit, '.' blank, top row first) into 5 column
/// bytes (bit r = row r). Runs at compile time, so a malformed row fails the build.
const fn g(rows: [&str; ROWS as usize]) -> [u8; WIDTH] {
    let mut cols = [0u8; WIDTH];
    let mut r = 0;
    while r < rows.len() {
        let row = rows[r].as_bytes();
        assert!(row.len() == WIDTH, "glyph row must be 5 characters");
        let mut c = 0;
        while c < WIDTH {
            match row[c] {
                b'#' => cols[c] |= 1 << r,
                b'.' => {}
                _ => panic!("glyph rows may only contain '#' and '.'"),
            }
            c += 1;
        }
        r += 1;
    }
    cols
}

#[rustfmt::skip]
const GLYPHS: &[(char, [u8; WIDTH])] = &[
    ('A', g([".###.", "#...#", "#...#", "#...#", "#####", "#...#", "#...#"])),
    ('B', g(["####.", "#...#", "#...#", "####.", "#...#", "#...#", "####."])),
    ('C', g([".###.", "#...#", "#....", "#....", "#....", "#...#", ".###."])),
    ('D', g(["###..", "#..#.", "#...#", "#...#", "#...#", "#..#.", "###.."])),
    ('E', g(["#####", "#....", "#....", "####.", "#....", "#....", "#####"])),
    ('F', g(["#####", "#....", "#....", "####.", "#....", "#....", "#...."])),
    ('G', g([".###.", "#...#", "#....", "#.###", "#...#", "#...#", ".####"])),
    ('H', g(["#...#", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"])),
    ('I', g([".###.", "..#..", "..#..", "..#..", "..#..", "..#..", ".###."])),
    ('J', g(["..###", "...#.", "...#.", "...#.", "...#.", "#..#.", ".##.."])),
    ('K', g(["#...#", "#..#.", "#.#..", "##...", "#.#..", "#..#.", "#...#"])),
    ('L', g(["#....", "#....", "#....", "#....", "#....", "#....", "#####"])),
    ('M', g(["#...#", "##.##", "#.#.#", "#.#.#", "#...#", "#...#", "#...#"])),
    ('N', g(["#...#", "#...#", "##..#", "#.#.#", "#..##", "#...#", "#...#"])),
    ('O', g([".###.", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."])),
    ('P', g(["####.", "#...#", "#...#", "####.", "#....", "#....", "#...."])),
    ('Q', g([".###.", "#...#", "#...#", "#...#", "#.#.#", "#..#.", ".##.#"])),
    ('R', g(["####.", "#...#", "#...#", "####.", "#.#..", "#..#.", "#...#"])),
    ('S', g([".####", "#....", "#....", ".###.", "....#", "....#", "####."])),
    ('T', g(["#####", "..#..", "..#..", "..#..", "..#..", "..#..", "..#.."])),
    ('U', g(["#...#", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."])),
    ('V', g(["#...#", "#...#", "#...#", "#...#", "#...#", ".#.#.", "..#.."])),
    ('W', g(["#...#", "#...#", "#...#", "#.#.#", "#.#.#", "#.#.#", ".#.#."])),
    ('X', g(["#...#", "#...#", ".#.#.", "..#..", ".#.#.", "#...#", "#...#"])),
    ('Y', g(["#...#", "#...#", "#...#", ".#.#.", "..#..", "..#..", "..#.."])),
    ('Z', g(["#####", "....#", "...#.", "..#..", ".#...", "#....", "#####"])),
    ('0', g([".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."])),
    ('1', g(["..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."])),
    ('2', g([".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"])),
    ('3', g(["#####", "...#.", "..#..", "...#.", "....#", "#...#", ".###."])),
    ('4', g(["...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."])),
    ('5', g(["#####", "#....", "####.", "....#", "....#", "#...#", ".###."])),
    ('6', g(["..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."])),
    ('7', g(["#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."])),
    ('8', g([".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."])),
    ('9', g([".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."])),
    (' ', g([".....", ".....", ".....", ".....", ".....", ".....", "....."])),
    ('.', g([".....", ".....", ".....", ".....", ".....", ".##..", ".##.."])),
    (',', g([".....", ".....", ".....", ".....", ".##..", "..#..", ".#..."])),
    ('!', g(["..#..", "..#..", "..#..", "..#..", ".....", ".....", "..#.."])),
    ('?', g([".###.", "#...#", "....#", "...#.", "..#..", ".....", "..#.."])),
    ('-', g([".....", ".....", ".....", "#####", ".....", ".....", "....."])),
    (':', g([".....", ".##..", ".##..", ".....", ".##..", ".##..", "....."])),
    ('\'', g([".##..", "..#..", ".#...", ".....", ".....", ".....", "....."])),
    ('/', g([".....", "....#", "...#.", "..#..", ".#...", "#....", "....."])),
    ('+', g([".....", "..#..", "..#..", "#####", "..#..", "..#..", "....."])),
    ('=', g([".....", ".....", "#####", ".....", "#####", ".....", "....."])),
    ('(', g(["...#.", "..#..", ".#...", ".#...", ".#...", "..#..", "...#."])),
    (')', g([".#...", "..#..", "...#.", "...#.", "...#.", "..#..", ".#..."])),
    ('_', g([".....", ".....", ".....", ".....", ".....", ".....", "#####"])),
];

fn glyph(c: char) -> Option<&'static [u8; WIDTH]> {
    let up = c.to_ascii_uppercase();
    GLYPHS.iter().find(|(g, _)| *g == up).map(|(_, cols)| cols)
}

/// The text as columns, left to right: bit r of a column is lit when row r is on, row 0 the TOP row.
/// Each glyph is 5 columns wide, followed by one blank column (also after the last glyph).
/// Lower-case letters are drawn as upper case. Returns Err(c) for the first character with no glyph.
pub fn render(text: &str) -> Result<Vec<u8>, char> {
    let mut out = Vec::with_capacity(text.len() * (WIDTH + 1));
    for c in text.chars() {
        out.extend_from_slice(glyph(c).ok_or(c)?);
        out.push(0);
    }
    Ok(out)
}

/// The text as ASCII art: 7 rows (top first) joined by '\n', '#' for lit and '.' for blank.
/// Returns Err(c) like [`render`].
pub fn banner(text: &str) -> Result<String, char> {
    let cols = render(text)?;
    let rows: Vec<String> =
        (0..ROWS).map(|r| cols.iter().map(|col| if (col >> r) & 1 == 1 { '#' } else { '.' }).collect()).collect();
    Ok(rows.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hi_columns() {
        let h = [0x7F, 0x08, 0x08, 0x08, 0x7F, 0];
        let i = [0x00, 0x41, 0x7F, 0x41, 0x00, 0];
        assert_eq!(render("HI").unwrap(), [h, i].concat());
        assert_eq!(render("hi").unwrap(), render("HI").unwrap());
        assert_eq!(render("").unwrap(), Vec::<u8>::new());
    }

    #[test]
    fn every_glyph_is_six_columns_of_seven_rows() {
        for &(c, _) in GLYPHS {
            let cols = render(&c.to_string()).unwrap();
            assert_eq!(cols.len(), 6, "{c:?}");
            assert!(cols.iter().all(|&col| col < 1 << ROWS), "{c:?}");
            assert_eq!(cols[5], 0, "{c:?}");
            if !c.is_ascii_alphanumeric() && c != ' ' {
                assert!(SUPPORTED.contains(c), "{c:?} missing from SUPPORTED");
            }
        }
    }

    #[test]
    fn letters_and_digits_present_non_empty_and_distinct() {
        let chars: Vec<char> = ('A'..='Z').chain('0'..='9').collect();
        let glyphs: Vec<&[u8; WIDTH]> = chars.iter().map(|&c| glyph(c).unwrap()).collect();
        for (i, (c, a)) in chars.iter().zip(&glyphs).enumerate() {
            assert!(a.iter().any(|&col| col != 0), "{c:?} is empty");
            for (d, b) in chars.iter().zip(&glyphs).skip(i + 1) {
                assert_ne!(a, b, "{c:?} and {d:?} look the same");
            }
        }
        // No character is listed twice in the table.
        for (i, (c, _)) in GLYPHS.iter().enumerate() {
            assert!(GLYPHS[i + 1..].iter().all(|(d, _)| d != c), "{c:?} twice");
        }
    }

    #[test]
    fn unsupported_char_is_an_error() {
        assert_eq!(render("AB€C"), Err('€'));
        assert_eq!(render("x@y#"), Err('@'));
        assert_eq!(banner("é"), Err('é'));
    }

    #[test]
    fn banners() {
        let hi = "\
#...#..###..
#...#...#...
#...#...#...
#####...#...
#...#...#...
#...#...#...
#...#..###..";
        assert_eq!(banner("HI").unwrap(), hi);
        println!("{}", banner("HELLO").unwrap());
    }
}

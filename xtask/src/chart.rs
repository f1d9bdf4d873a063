//! A small PNG bar chart for `cargo xtask bench`, with no image library: an RGB canvas,
//! text through `ab_glyph` from a system TrueType font (DejaVu Sans when present; without
//! one the chart has bars and grid lines but no text), and a PNG encoder writing stored
//! (uncompressed) deflate blocks, which every PNG reader accepts.

use ab_glyph::{Font, FontVec, PxScale, ScaleFont};

const FONTS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

struct Canvas {
    w: usize,
    h: usize,
    px: Vec<[u8; 3]>,
    font: Option<FontVec>,
}

impl Canvas {
    fn new(w: usize, h: usize) -> Canvas {
        let font = FONTS.iter().find_map(|p| std::fs::read(p).ok()).and_then(|b| FontVec::try_from_vec(b).ok());
        Canvas { w, h, px: vec![[255; 3]; w * h], font }
    }

    fn rect(&mut self, x0: i64, y0: i64, x1: i64, y1: i64, color: [u8; 3]) {
        let (xa, xb) = (x0.min(x1).max(0) as usize, (x0.max(x1).max(0) as usize).min(self.w));
        let (ya, yb) = (y0.min(y1).max(0) as usize, (y0.max(y1).max(0) as usize).min(self.h));
        for y in ya..yb {
            for x in xa..xb {
                self.px[y * self.w + x] = color;
            }
        }
    }

    fn blend(&mut self, x: i64, y: i64, color: [u8; 3], alpha: f32) {
        if x < 0 || y < 0 || x as usize >= self.w || y as usize >= self.h {
            return;
        }
        let p = &mut self.px[y as usize * self.w + x as usize];
        for c in 0..3 {
            p[c] = (p[c] as f32 * (1.0 - alpha) + color[c] as f32 * alpha).round() as u8;
        }
    }

    /// Width of `text` in pixels at `size` (0 without a font).
    fn text_width(&self, text: &str, size: f32) -> f32 {
        let Some(font) = &self.font else { return 0.0 };
        let f = font.as_scaled(PxScale::from(size));
        text.chars().map(|c| f.h_advance(f.glyph_id(c))).sum()
    }

    /// Draws `text` with its baseline at `y`, starting at `x`.
    fn text(&mut self, x: f32, y: f32, text: &str, size: f32, color: [u8; 3]) {
        let Some(font) = self.font.take() else { return };
        {
            let f = font.as_scaled(PxScale::from(size));
            let mut pen = x;
            for c in text.chars() {
                let id = f.glyph_id(c);
                let glyph = id.with_scale_and_position(size, ab_glyph::point(pen, y));
                pen += f.h_advance(id);
                if let Some(outline) = font.outline_glyph(glyph) {
                    let b = outline.px_bounds();
                    outline
                        .draw(|gx, gy, a| self.blend(b.min.x as i64 + gx as i64, b.min.y as i64 + gy as i64, color, a));
                }
            }
        }
        self.font = Some(font);
    }

    fn png(&self) -> Vec<u8> {
        let mut raw = Vec::with_capacity(self.h * (1 + 3 * self.w));
        for row in self.px.chunks(self.w) {
            raw.push(0); // filter: none
            raw.extend(row.iter().flatten());
        }
        let mut ihdr = Vec::new();
        ihdr.extend((self.w as u32).to_be_bytes());
        ihdr.extend((self.h as u32).to_be_bytes());
        ihdr.extend([8, 2, 0, 0, 0]); // 8-bit RGB, deflate, no filter, no interlace
        let mut out = vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
        chunk(&mut out, b"IHDR", &ihdr);
        chunk(&mut out, b"IDAT", &zlib_stored(&raw));
        chunk(&mut out, b"IEND", &[]);
        out
    }
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend((data.len() as u32).to_be_bytes());
    let start = out.len();
    out.extend(kind);
    out.extend(data);
    let crc = crc32(&out[start..]);
    out.extend(crc.to_be_bytes());
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xedb8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// A zlib stream of stored deflate blocks (no compression).
fn zlib_stored(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = if data.is_empty() { vec![&[][..]] } else { data.chunks(65_535).collect() };
    for (i, block) in blocks.iter().enumerate() {
        out.push(u8::from(i + 1 == blocks.len()));
        let len = block.len() as u16;
        out.extend(len.to_le_bytes());
        out.extend((!len).to_le_bytes());
        out.extend(*block);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for &x in data {
        a = (a + x as u32) % 65_521;
        b = (b + a) % 65_521;
    }
    out.extend(((b << 16) | a).to_be_bytes());
    out
}

/// Horizontal bars of `ratio` per name on a log axis with a line at 1: red where the
/// ratio is above 1, green below. Returns the PNG file's bytes.
pub fn bar_chart(title: &str, bars: &[(String, f64)]) -> Vec<u8> {
    let (w, top, row, left, right) = (960usize, 56usize, 34usize, 230.0f32, 70.0f32);
    let h = top + row * bars.len().max(1) + 50;
    let mut c = Canvas::new(w, h);
    let finite = || bars.iter().map(|b| b.1).filter(|r| r.is_finite() && *r > 0.0);
    let lo = finite().fold(1.0f64, f64::min).log10().floor().min(-1.0);
    let hi = finite().fold(1.0f64, f64::max).log10().ceil().max(1.0);
    let plot_w = w as f32 - left - right;
    let x_of = |r: f64| left + ((r.log10() - lo) / (hi - lo)) as f32 * plot_w;
    let bottom = (top + row * bars.len().max(1)) as i64;
    c.text(16.0, 30.0, title, 18.0, [20, 20, 20]);
    for d in lo as i64..=hi as i64 {
        let x = x_of(10f64.powi(d as i32)) as i64;
        let color = if d == 0 { [60, 60, 60] } else { [215, 215, 215] };
        c.rect(x, top as i64 - 6, x + if d == 0 { 2 } else { 1 }, bottom + 4, color);
        let label = format!("{}x", 10f64.powi(d as i32));
        let tw = c.text_width(&label, 13.0);
        c.text(x as f32 - tw / 2.0, bottom as f32 + 22.0, &label, 13.0, [80, 80, 80]);
    }
    for (i, (name, r)) in bars.iter().enumerate() {
        let y = (top + i * row) as i64;
        let tw = c.text_width(name, 14.0);
        c.text(left - 10.0 - tw, y as f32 + row as f32 * 0.65, name, 14.0, [30, 30, 30]);
        if !(r.is_finite() && *r > 0.0) {
            continue;
        }
        let (x1, x0) = (x_of(*r) as i64, x_of(1.0) as i64);
        let color = if *r > 1.0 { [214, 96, 77] } else { [77, 170, 110] };
        c.rect(x0, y + 6, x1, y + row as i64 - 6, color);
        let label = format!("{r:.2}x");
        // Labels go right of the bar's far end, or right of the 1x line for bars that
        // grow to the left (their far end may be at the chart's left edge).
        let at = if *r >= 1.0 { x1 as f32 + 6.0 } else { x0 as f32 + 6.0 };
        c.text(at, y as f32 + row as f32 * 0.65, &label, 13.0, [30, 30, 30]);
    }
    c.png()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_match_known_values() {
        // CRC-32 and Adler-32 of "123456789" are standard check values.
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        let z = zlib_stored(b"123456789");
        assert_eq!(&z[z.len() - 4..], &0x091e_01deu32.to_be_bytes());
        // One final stored block: header, LEN 9, NLEN !9.
        assert_eq!(&z[2..7], &[1, 9, 0, 0xf6, 0xff]);
    }

    #[test]
    fn chart_is_a_png_of_the_right_size() {
        let png = bar_chart("t", &[("a".into(), 2.0), ("b".into(), 0.5)]);
        assert_eq!(&png[1..4], b"PNG");
        assert_eq!(&png[12..16], b"IHDR");
        assert_eq!(u32::from_be_bytes(png[16..20].try_into().unwrap()), 960);
        assert_eq!(u32::from_be_bytes(png[20..24].try_into().unwrap()), 56 + 34 * 2 + 50);
    }
}

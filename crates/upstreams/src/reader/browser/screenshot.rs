//! A rendered page as a PNG: the viewport every tab is laid out in ([`VIEWPORT_WIDTH`] ×
//! [`VIEWPORT_HEIGHT`] CSS pixels at one device pixel each), and the capture — the viewport
//! (Firecrawl's `screenshot`) or the whole page (`screenshot@fullPage`) — bounded twice, since
//! the page is untrusted: the full page is cut at [`MAX_FULL_HEIGHT`] pixels (so what Chromium
//! encodes is at most 1280 × 10,000 pixels, about 51 MB raw), and a PNG over [`MAX_PNG_BYTES`]
//! (noise compresses badly) is refused as `too_large` before it is decoded.
//!
//! The capture is one `Page.captureScreenshot` on the settled page of the render, in its tab,
//! context and time: what the page requests meanwhile goes through the same fence.

use base64::Engine as _;
use chromiumoxide::cdp::browser_protocol::emulation::SetDeviceMetricsOverrideParams;
use chromiumoxide::cdp::browser_protocol::page::{
    CaptureScreenshotFormat, CaptureScreenshotParams, GetLayoutMetricsParams, Viewport,
};
use url::Url;

use super::RenderOutcome;

/// The width of every tab's viewport, in CSS pixels (one device pixel each).
pub(crate) const VIEWPORT_WIDTH: u32 = 1280;
/// The height of every tab's viewport.
pub(crate) const VIEWPORT_HEIGHT: u32 = 800;
/// The tallest full-page screenshot; a taller page is cut there.
pub(crate) const MAX_FULL_HEIGHT: u32 = 10_000;
/// The largest PNG handed out.
pub(crate) const MAX_PNG_BYTES: usize = 10 * 1024 * 1024;

/// How much of the page a screenshot shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shot {
    /// The viewport: 1280 × 800.
    Viewport,
    /// The whole page, 1280 wide, as tall as the page (at least the viewport, at most
    /// [`MAX_FULL_HEIGHT`]).
    FullPage,
}

/// A page's screenshot.
#[derive(Debug, Clone)]
pub struct Screenshot {
    /// Where the page ended up (after redirects and script navigation).
    pub final_url: Url,
    /// The PNG.
    pub png: Vec<u8>,
}

/// Lays `page` out in the viewport, before it navigates.
pub(super) async fn set_viewport(page: &chromiumoxide::Page) -> Result<(), RenderOutcome> {
    page.execute(SetDeviceMetricsOverrideParams::new(
        i64::from(VIEWPORT_WIDTH),
        i64::from(VIEWPORT_HEIGHT),
        1.0,
        false,
    ))
    .await
    .map(|_| ())
    .map_err(|_| RenderOutcome::Failed)
}

/// The PNG of the settled `page`.
pub(super) async fn capture(
    page: &chromiumoxide::Page,
    shot: Shot,
) -> Result<Vec<u8>, RenderOutcome> {
    let failed = |_| RenderOutcome::Failed;
    let mut params = CaptureScreenshotParams::builder()
        .format(CaptureScreenshotFormat::Png)
        .from_surface(true)
        .build();
    if shot == Shot::FullPage {
        let metrics = page
            .execute(GetLayoutMetricsParams::default())
            .await
            .map_err(failed)?;
        let height = full_height(metrics.result.css_content_size.height);
        params.clip = Some(Viewport {
            x: 0.0,
            y: 0.0,
            width: f64::from(VIEWPORT_WIDTH),
            height: f64::from(height),
            scale: 1.0,
        });
        params.capture_beyond_viewport = Some(true);
    }
    let captured = page.execute(params).await.map_err(failed)?;
    decode(AsRef::<str>::as_ref(&captured.result.data))
}

/// The height of a full-page screenshot of a page `content` CSS pixels tall.
fn full_height(content: f64) -> u32 {
    if !content.is_finite() {
        return VIEWPORT_HEIGHT;
    }
    // In range after the clamp: the cast cannot truncate.
    content
        .ceil()
        .clamp(f64::from(VIEWPORT_HEIGHT), f64::from(MAX_FULL_HEIGHT)) as u32
}

/// The PNG of Chromium's base64, refused unread when it would be over [`MAX_PNG_BYTES`].
fn decode(base64: &str) -> Result<Vec<u8>, RenderOutcome> {
    if base64.len() / 4 * 3 > MAX_PNG_BYTES + 3 {
        return Err(RenderOutcome::TooLarge);
    }
    let png = base64::engine::general_purpose::STANDARD
        .decode(base64)
        .map_err(|_| RenderOutcome::Failed)?;
    if png.len() > MAX_PNG_BYTES {
        return Err(RenderOutcome::TooLarge);
    }
    if !png.starts_with(b"\x89PNG\r\n\x1a\n") {
        return Err(RenderOutcome::Failed);
    }
    Ok(png)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_full_page_is_at_least_the_viewport_and_at_most_the_cap() {
        assert_eq!(full_height(120.0), VIEWPORT_HEIGHT);
        assert_eq!(full_height(2400.4), 2401);
        assert_eq!(full_height(1e9), MAX_FULL_HEIGHT);
        assert_eq!(full_height(f64::NAN), VIEWPORT_HEIGHT);
        assert_eq!(full_height(f64::INFINITY), VIEWPORT_HEIGHT);
    }

    #[test]
    fn a_png_over_the_cap_is_refused_before_it_is_decoded() {
        let png = b"\x89PNG\r\n\x1a\nrest".to_vec();
        let small = base64::engine::general_purpose::STANDARD.encode(&png);
        assert_eq!(decode(&small).unwrap(), png);
        let huge = "A".repeat((MAX_PNG_BYTES + 8) / 3 * 4 + 4);
        assert_eq!(decode(&huge).unwrap_err(), RenderOutcome::TooLarge);
        let not_png = base64::engine::general_purpose::STANDARD.encode(b"GIF89a....");
        assert_eq!(decode(&not_png).unwrap_err(), RenderOutcome::Failed);
    }
}

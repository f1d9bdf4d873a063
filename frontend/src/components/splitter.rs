//! A bar between two panes that resizes them when dragged (pointer capture, so the drag
//! goes on when the pointer leaves the bar).

use leptos::prelude::*;

#[component]
pub fn Splitter(
    /// `data-testid` of the bar.
    testid: &'static str,
    /// A bar between side-by-side panes (dragged left and right), else between stacked ones.
    vertical: bool,
    /// Pixels moved since the last call.
    on_drag: impl Fn(f64) + 'static,
    /// The drag ended.
    on_end: impl Fn() + 'static,
) -> impl IntoView {
    let last: StoredValue<Option<f64>> = StoredValue::new(None);
    let coord = move |e: &web_sys::PointerEvent| if vertical { e.client_x() as f64 } else { e.client_y() as f64 };
    view! {
        <div
            class="splitter"
            class:vertical=vertical
            class:horizontal=!vertical
            data-testid=testid
            on:pointerdown=move |e: web_sys::PointerEvent| {
                e.prevent_default();
                let target: web_sys::Element = event_target(&e);
                let _ = target.set_pointer_capture(e.pointer_id());
                last.set_value(Some(coord(&e)));
            }
            on:pointermove=move |e: web_sys::PointerEvent| {
                if let Some(was) = last.get_value() {
                    let now = coord(&e);
                    last.set_value(Some(now));
                    on_drag(now - was);
                }
            }
            on:pointerup=move |_| {
                if last.get_value().is_some() {
                    last.set_value(None);
                    on_end();
                }
            }
        ></div>
    }
}

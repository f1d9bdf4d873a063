//! Two passes' texts compared: the selected pass against any other (by default the one
//! before it), unified or side by side, long runs of unchanged lines folded (click to
//! unfold).

use crate::protocol::{DiffKind, DiffLine};
use crate::state::state;
use leptos::prelude::*;
use std::collections::HashSet;

/// Unchanged lines kept on each side of a change.
const CONTEXT: usize = 3;
/// Items drawn at first, and added by each "show more": a large module's fusion pass
/// changes thousands of lines, and drawing them all would stall the page for seconds.
const PAGE: usize = 600;

/// A line to draw, or a fold of `len` unchanged lines starting at `start`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Item {
    Line(usize),
    Fold { start: usize, len: usize },
}

/// The lines to draw: runs of unchanged lines longer than the context around a change
/// fold, unless `open` holds the run's start.
fn fold(lines: &[DiffLine], open: &HashSet<usize>) -> Vec<Item> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].kind != DiffKind::Same {
            out.push(Item::Line(i));
            i += 1;
            continue;
        }
        let start = i;
        while i < lines.len() && lines[i].kind == DiffKind::Same {
            i += 1;
        }
        let (head, tail) = (if start == 0 { 0 } else { CONTEXT }, if i == lines.len() { 0 } else { CONTEXT });
        let len = i - start;
        if len > head + tail + 1 && !open.contains(&start) {
            out.extend((start..start + head).map(Item::Line));
            out.push(Item::Fold { start, len: len - head - tail });
            out.extend((i - tail..i).map(Item::Line));
        } else {
            out.extend((start..i).map(Item::Line));
        }
    }
    out
}

fn number(n: u32) -> String {
    if n == 0 {
        String::new()
    } else {
        n.to_string()
    }
}

fn line_view(l: &DiffLine) -> impl IntoView {
    let (class, testid, sign) = match l.kind {
        DiffKind::Added => ("diff-line added", Some("diff-added"), "+"),
        DiffKind::Removed => ("diff-line removed", Some("diff-removed"), "-"),
        DiffKind::Same => ("diff-line", None, " "),
    };
    view! {
        <div class=class data-testid=testid>
            <span class="ln">{number(l.old)}</span>
            <span class="ln">{number(l.new)}</span>
            <span class="text">{sign}{l.text.clone()}</span>
        </div>
    }
}

/// A row of the side-by-side table: the old line on the left, the new on the right.
fn side_row(left: Option<&DiffLine>, right: Option<&DiffLine>) -> impl IntoView {
    let cell = |l: Option<&DiffLine>, old: bool| {
        let (class, testid) = match l.map(|l| l.kind) {
            Some(DiffKind::Removed) => ("removed", Some("diff-removed")),
            Some(DiffKind::Added) => ("added", Some("diff-added")),
            Some(DiffKind::Same) => ("", None),
            None => ("blank", None),
        };
        let n = l.map_or(0, |l| if old { l.old } else { l.new });
        view! {
            <td class="ln">{number(n)}</td>
            <td class=format!("text {class}") data-testid=testid>{l.map(|l| l.text.clone())}</td>
        }
    };
    view! { <tr>{cell(left, true)}{cell(right, false)}</tr> }
}

#[component]
pub fn Diff() -> impl IntoView {
    let st = state();
    let open: RwSignal<HashSet<usize>> = RwSignal::new(HashSet::new());
    let limit = RwSignal::new(PAGE);
    Effect::new(move |_| {
        st.diff.with(|d| d.as_ref().map(|d| (d.0, d.1)));
        open.set(HashSet::new());
        limit.set(PAGE);
    });
    let counts = move || {
        st.diff.with(|d| {
            let (_, _, lines) = d.as_ref()?;
            let n = |k| lines.iter().filter(|l| l.kind == k).count();
            Some(format!("+{} −{}", n(DiffKind::Added), n(DiffKind::Removed)))
        })
    };
    let unfold = move |start: usize| {
        open.update(|o| {
            o.insert(start);
        })
    };
    let body = move || {
        let sbs = st.side_by_side.get();
        let open = open.get();
        st.diff.with(|d| {
            let Some((pass, against, lines)) = d else { return ().into_any() };
            if pass == against {
                return view! { <p class="empty">"the same pass on both sides: pick another to diff against"</p> }
                    .into_any();
            }
            if lines.iter().all(|l| l.kind == DiffKind::Same) {
                return view! { <p class="empty">"no difference"</p> }.into_any();
            }
            let mut items = fold(lines, &open);
            let more = items.len().saturating_sub(limit.get());
            items.truncate(limit.get());
            let more = (more > 0).then(|| {
                view! {
                    <button class="fold more" data-testid="diff-more" on:click=move |_| limit.update(|l| *l += PAGE)>
                        {format!("{more} more lines of the diff: show {}", more.min(PAGE))}
                    </button>
                }
            });
            let fold_row = move |start: usize, len: usize| {
                view! {
                    <button class="fold" data-testid="diff-expand" on:click=move |_| unfold(start)>
                        {format!("⋯ {len} unchanged lines")}
                    </button>
                }
            };
            if !sbs {
                let drawn = items
                    .iter()
                    .map(|&it| match it {
                        Item::Line(i) => line_view(&lines[i]).into_any(),
                        Item::Fold { start, len } => fold_row(start, len).into_any(),
                    })
                    .collect_view();
                return view! { {drawn} {more} }.into_any();
            }
            // Side by side: a change block's removed lines pair with its added ones.
            let mut rows = Vec::new();
            let mut k = 0;
            while k < items.len() {
                match items[k] {
                    Item::Fold { start, len } => {
                        rows.push(view! { <tr><td colspan="4">{fold_row(start, len)}</td></tr> }.into_any());
                        k += 1;
                    }
                    Item::Line(i) if lines[i].kind == DiffKind::Same => {
                        rows.push(side_row(Some(&lines[i]), Some(&lines[i])).into_any());
                        k += 1;
                    }
                    Item::Line(_) => {
                        let (mut left, mut right) = (Vec::new(), Vec::new());
                        while let Some(&Item::Line(i)) = items.get(k) {
                            match lines[i].kind {
                                DiffKind::Removed => left.push(i),
                                DiffKind::Added => right.push(i),
                                DiffKind::Same => break,
                            }
                            k += 1;
                        }
                        for r in 0..left.len().max(right.len()) {
                            let (l, rt) = (left.get(r).map(|&i| &lines[i]), right.get(r).map(|&i| &lines[i]));
                            rows.push(side_row(l, rt).into_any());
                        }
                    }
                }
            }
            view! { <table class="side-by-side"><tbody>{rows}</tbody></table> {more} }.into_any()
        })
    };
    view! {
        <h2>
            "diff "
            <select
                data-testid="diff-against"
                title="the pass to compare the selected one with"
                prop:value=move || st.against.get().unwrap_or_default()
                on:change=move |ev| {
                    let v = event_target_value(&ev);
                    st.against.set(if v.is_empty() { None } else { Some(v) });
                }
            >
                <option value="">"against the previous pass"</option>
                {move || {
                    st.passes
                        .with(|ps| {
                            ps.iter()
                                .map(|p| {
                                    let name = p.name.clone();
                                    // Selected by the option itself: the list arrives after the choice
                                    // (from the URL), and a select's value cannot name an option to come.
                                    let chosen = move || st.against.with(|a| a.as_deref() == Some(name.as_str()));
                                    view! { <option value=p.name.clone() prop:selected=chosen>{format!("against {}", p.name)}</option> }
                                })
                                .collect_view()
                        })
                }}
            </select>
            <label class="toggle">
                <input
                    type="checkbox"
                    data-testid="side-by-side"
                    prop:checked=move || st.side_by_side.get()
                    on:change=move |ev| st.side_by_side.set(event_target_checked(&ev))
                />
                "side by side"
            </label>
            <small data-testid="diff-counts">{counts}</small>
        </h2>
        <div class="diff" class:sbs=move || st.side_by_side.get() data-testid="diff">
            {body}
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(kinds: &str) -> Vec<DiffLine> {
        kinds
            .chars()
            .map(|c| DiffLine {
                kind: match c {
                    '+' => DiffKind::Added,
                    '-' => DiffKind::Removed,
                    _ => DiffKind::Same,
                },
                old: 0,
                new: 0,
                text: String::new(),
            })
            .collect()
    }

    #[test]
    fn long_unchanged_runs_fold_around_their_context() {
        // 10 same, a change, 10 same: the head run keeps its last 3, the tail its first 3.
        let d = lines("==========-+==========");
        let items = fold(&d, &HashSet::new());
        assert_eq!(items[0], Item::Fold { start: 0, len: 7 });
        assert_eq!(&items[1..6], &[7, 8, 9, 10, 11].map(Item::Line));
        assert_eq!(items[9], Item::Fold { start: 12, len: 7 });
        assert_eq!(items.len(), 10);
        // Opened, a run shows in full.
        assert_eq!(fold(&d, &HashSet::from([0, 12])).len(), d.len());
    }
}

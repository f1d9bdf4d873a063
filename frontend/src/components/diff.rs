//! The selected pass's text against the previous pass's, as a unified diff.

use crate::protocol::{DiffKind, PassView};
use leptos::prelude::*;

#[component]
pub fn Diff(
    /// The selected pass.
    #[prop(into)]
    pass: Signal<Option<PassView>>,
) -> impl IntoView {
    view! {
        <div class="diff" data-testid="diff">
            {move || {
                pass.with(|p| match p {
                    Some(p) if !p.diff.is_empty() => {
                        p.diff
                            .iter()
                            .map(|l| {
                                let (class, testid, sign) = match l.kind {
                                    DiffKind::Added => ("diff-line added", Some("diff-added"), "+"),
                                    DiffKind::Removed => ("diff-line removed", Some("diff-removed"), "-"),
                                    DiffKind::Hunk => ("diff-line hunk", None, ""),
                                    DiffKind::Same => ("diff-line", None, " "),
                                };
                                view! { <div class=class data-testid=testid>{sign}{l.text.clone()}</div> }
                            })
                            .collect_view()
                            .into_any()
                    }
                    Some(p) if p.name == "input" => {
                        view! { <p class="empty">"the input: select a later pass to see what it changed"</p> }.into_any()
                    }
                    Some(_) => view! { <p class="empty">"this pass changed nothing"</p> }.into_any(),
                    None => ().into_any(),
                })
            }}
        </div>
    }
}

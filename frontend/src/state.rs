//! The page's state: what the worker answered, and what the person chose. One `Copy`
//! bundle of signals in the Leptos context, so each pane reads what it draws.

use crate::protocol::{
    CompileConfig, CostView, DecisionView, DiffLine, GraphView, NodeView, PassSummary, PassView, ViewSpec,
};
use crate::protocol::{KernelsView, ParamView, ProfileView, RunView, TargetInfo};
use leptos::prelude::*;

#[derive(Clone, Copy)]
pub struct State {
    /// The last good compile's passes, and the view of one of them on screen.
    pub passes: RwSignal<Vec<PassSummary>>,
    pub view: RwSignal<Option<PassView>>,
    /// The view's parts, each a memo so that a pane redraws only when its own part
    /// changed (an edit that changes nothing redraws nothing).
    pub graph: Memo<Option<GraphView>>,
    /// (pass, against, lines).
    pub diff: Memo<Option<(usize, usize, Vec<DiffLine>)>>,
    pub decisions: Memo<Vec<DecisionView>>,
    /// The rewrites the pass on screen applied: (rule, instruction).
    pub rewrites: Memo<Vec<(String, String)>>,
    /// The pass chosen by name (None: the worker's default, the fusion pass).
    pub pass: RwSignal<Option<String>>,
    /// The pass the diffs are against (None: the previous one).
    pub against: RwSignal<Option<String>>,
    pub graph_diff: RwSignal<bool>,
    /// Clusters opened or closed by hand (see `ViewSpec::toggled`).
    pub toggled: RwSignal<Vec<String>>,
    pub hide_unchanged: RwSignal<bool>,
    pub side_by_side: RwSignal<bool>,
    /// The selected node's id.
    pub node: RwSignal<Option<String>>,
    /// The editor's cursor line (1-based; 0 before the first move).
    pub cursor_line: RwSignal<u32>,
    /// The selected fusion decision, an index into the view's decisions.
    pub decision: RwSignal<Option<usize>>,
    /// Bumped to ask the graph to fit itself to its pane.
    pub fit: RwSignal<u32>,
    /// The fusion lab's settings: pipeline spec, fusion knobs (`knobs.rs`), cost profile.
    pub pipeline: RwSignal<String>,
    pub fusion: RwSignal<String>,
    pub profile: RwSignal<String>,
    /// The last good compile's cost, and what is wrong with the lab's settings.
    pub cost: RwSignal<Option<CostView>>,
    pub config_problem: RwSignal<Option<String>>,
    /// The tab of the bottom-right pane: `decisions`, `lab`, `cost`, `kernels` or `run`.
    pub tab: RwSignal<String>,
    /// The run pane's choices and its last result (kept while other tabs show).
    pub run_target: RwSignal<String>,
    /// `random` (from `run_seed`) or `files` (an `.npy` file per parameter).
    pub run_inputs: RwSignal<String>,
    pub run_seed: RwSignal<u64>,
    /// The last good compile's entry parameters, with the files picked for them as the
    /// worker checked them (the bytes stay in `api::Compiler`).
    pub params: RwSignal<Vec<ParamView>>,
    pub run_unfused: RwSignal<bool>,
    /// Whether this page has WebGPU: the adapter `navigator.gpu` offers, in words, or
    /// why there is none (`None` while asking).
    pub webgpu: RwSignal<Option<Result<String, String>>>,
    /// What the server runs (`GET /api/targets`), or why no server answered (`None`
    /// while asking).
    pub server_targets: RwSignal<Option<Result<Vec<TargetInfo>, String>>>,
    /// The server's CPU as a cost profile (`GET /api/profile`), or why there is none
    /// (`None` while asking).
    pub server_profile: RwSignal<Option<Result<ProfileView, String>>>,
    pub run_busy: RwSignal<bool>,
    pub run: RwSignal<Option<RunOutcome>>,
    /// Runs shown so far (`data-runs` on the result: a test sees a new one arrive).
    pub runs_shown: RwSignal<u32>,
    pub run_error: RwSignal<Option<String>>,
    /// Bumped by every good compile (what depends on the compiled module asks again).
    pub compiles: RwSignal<u32>,
    /// The kernels pane: the machine, the kernel asked for (a plan index), the form shown
    /// (`clif` or `asm`), and the worker's last listing or why there is none.
    pub kernel_machine: RwSignal<String>,
    pub kernel: RwSignal<Option<usize>>,
    pub kernel_form: RwSignal<String>,
    pub kernels: RwSignal<Option<KernelsView>>,
    pub kernels_error: RwSignal<Option<String>>,
    /// A line of a kernel's code clicked: (kernel, HLO instruction), lit in the graph.
    pub code_lit: RwSignal<Option<(String, String)>>,
    /// The guided tour being walked, and its step.
    pub tour: RwSignal<Option<(crate::tours::Tour, usize)>>,
    /// A decision a tour step asked for, selected once its pass's decisions are on screen.
    pub pending_decision: RwSignal<Option<(String, String)>>,
}

/// A run's results, and the same run unfused when asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct RunOutcome {
    pub fused: RunView,
    pub unfused: Option<RunView>,
}

impl State {
    /// Shows a run's result.
    pub fn show_run(&self, r: RunOutcome) {
        self.run.set(Some(r));
        self.runs_shown.update(|n| *n += 1);
    }

    pub fn new() -> State {
        let view: RwSignal<Option<PassView>> = RwSignal::new(None);
        State {
            passes: RwSignal::new(Vec::new()),
            view,
            graph: Memo::new(move |_| view.with(|v| v.as_ref().map(|v| v.graph.clone()))),
            diff: Memo::new(move |_| view.with(|v| v.as_ref().map(|v| (v.pass, v.against, v.diff.clone())))),
            decisions: Memo::new(move |_| view.with(|v| v.as_ref().map(|v| v.decisions.clone()).unwrap_or_default())),
            rewrites: Memo::new(move |_| view.with(|v| v.as_ref().map(|v| v.rewrites.clone()).unwrap_or_default())),
            pass: RwSignal::new(None),
            against: RwSignal::new(None),
            graph_diff: RwSignal::new(false),
            toggled: RwSignal::new(Vec::new()),
            hide_unchanged: RwSignal::new(false),
            side_by_side: RwSignal::new(false),
            node: RwSignal::new(None),
            cursor_line: RwSignal::new(0),
            decision: RwSignal::new(None),
            fit: RwSignal::new(0),
            pipeline: RwSignal::new(CompileConfig::default().pipeline),
            fusion: RwSignal::new(String::new()),
            profile: RwSignal::new(CompileConfig::default().profile),
            cost: RwSignal::new(None),
            config_problem: RwSignal::new(None),
            tab: RwSignal::new("decisions".into()),
            run_target: RwSignal::new("browser-cpu".into()),
            run_inputs: RwSignal::new("random".into()),
            run_seed: RwSignal::new(0),
            params: RwSignal::new(Vec::new()),
            run_unfused: RwSignal::new(false),
            webgpu: RwSignal::new(None),
            server_targets: RwSignal::new(None),
            server_profile: RwSignal::new(None),
            run_busy: RwSignal::new(false),
            run: RwSignal::new(None),
            runs_shown: RwSignal::new(0),
            run_error: RwSignal::new(None),
            compiles: RwSignal::new(0),
            kernel_machine: RwSignal::new("x86-64-v3".into()),
            kernel: RwSignal::new(None),
            kernel_form: RwSignal::new("clif".into()),
            kernels: RwSignal::new(None),
            kernels_error: RwSignal::new(None),
            code_lit: RwSignal::new(None),
            tour: RwSignal::new(None),
            pending_decision: RwSignal::new(None),
        }
    }

    /// What to ask the worker for (read without tracking).
    pub fn spec(&self) -> ViewSpec {
        ViewSpec {
            pass: self.pass.get_untracked(),
            against: self.against.get_untracked(),
            graph_diff: self.graph_diff.get_untracked(),
            toggled: self.toggled.get_untracked(),
        }
    }

    /// Shows step `i` of the tour: its pass, and its node or decision.
    pub fn tour_step(&self, i: usize) {
        let Some(step) = self.tour.with_untracked(|t| t.as_ref().and_then(|(t, _)| t.steps.get(i).cloned())) else {
            return;
        };
        self.tour.update(|t| {
            if let Some(t) = t {
                t.1 = i;
            }
        });
        let same_pass = self.shown_pass().as_deref() == Some(step.pass.as_str());
        self.pass.set(Some(step.pass));
        self.node.set(step.node);
        match step.decision {
            Some(d) => {
                self.tab.set("decisions".into());
                let at =
                    self.decisions.with_untracked(|ds| ds.iter().position(|x| x.producer == d.0 && x.consumer == d.1));
                match (same_pass, at) {
                    (true, Some(i)) => self.decision.set(Some(i)),
                    _ => self.pending_decision.set(Some(d)),
                }
            }
            None => self.decision.set(None),
        }
    }

    /// Whether a compile should wait: the server's measured profile is chosen and its
    /// numbers are still on their way (what compiles waits for them, see `lib.rs`).
    pub fn awaits_server_profile(&self) -> bool {
        self.profile.get_untracked() == crate::protocol::SERVER_PROFILE
            && self.server_profile.get_untracked().is_none()
            && !matches!(self.server_targets.get_untracked(), Some(Err(_)))
    }

    /// How to compile (read without tracking).
    pub fn config(&self) -> CompileConfig {
        CompileConfig {
            pipeline: self.pipeline.get_untracked(),
            fusion: self.fusion.get_untracked(),
            profile: self.profile.get_untracked(),
            measured: self.server_profile.get_untracked().and_then(Result::ok),
        }
    }

    /// The name of the pass on screen, else the one chosen.
    pub fn shown_pass(&self) -> Option<String> {
        let shown = self.view.with(|v| v.as_ref().map(|v| v.pass));
        match shown {
            Some(i) => self.passes.with(|p| p.get(i).map(|p| p.name.clone())),
            None => self.pass.get(),
        }
    }

    /// The selected node as the view on screen has it.
    pub fn selected_node(&self) -> Option<NodeView> {
        let id = self.node.get()?;
        self.graph.with(|g| g.as_ref()?.nodes.iter().find(|n| n.id == id).cloned())
    }

    /// The passes the list shows (all, or those that changed something), as indexes.
    pub fn visible_passes(&self) -> Vec<usize> {
        let hide = self.hide_unchanged.get();
        self.passes
            .with(|ps| ps.iter().enumerate().filter(|(i, p)| !hide || p.changed || *i == 0).map(|(i, _)| i).collect())
    }
}

impl Default for State {
    fn default() -> Self {
        State::new()
    }
}

pub fn state() -> State {
    expect_context::<State>()
}

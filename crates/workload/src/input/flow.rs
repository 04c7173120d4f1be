//! Flows and file sets: a [[workload]]'s `flow` (crate::flow), and the [dataset]'s
//! `prealloc` and gamma `sizes` ("gamma:MEAN:SHAPE"), read here with their locations and
//! checked against the keys a flow replaces.

use super::*;
use crate::flow::{check_order, FlowStep, MAX_FLOW_STEPS, STEP_FORM};
use crate::plan::SizeGamma;

const GAMMA_FORM: &str =
    "\"gamma:MEAN:SHAPE\", like \"gamma:128k:1.5\" (mean from 1 byte to 64 GiB, shape from 0.01 to 100)";

impl<'a> Ctx<'a> {
    /// `flow = ["create", "write_whole 1m", "close", ...]`: its steps, in an order that works.
    pub(super) fn flow_steps(&mut self, key: &str) -> Got<Vec<FlowStep>> {
        let expected = format!("a list of steps, each {STEP_FORM}");
        let Some((items, loc)) = self.list_items(key, &expected, false) else {
            return Got::Absent;
        };
        let mut steps = Vec::new();
        let mut locs = Vec::new();
        for (item, iloc) in &items {
            let text = match item {
                ListItem::Text(t) => Some(*t),
                ListItem::Toml(v) => v.as_str(),
            };
            match text.map(FlowStep::parse) {
                Some(Ok(s)) => {
                    steps.push(s);
                    locs.push(iloc.clone());
                }
                Some(Err(why)) => self.err(iloc, key, STEP_FORM, why),
                None => self.err(iloc, key, STEP_FORM, "a step is a string"),
            }
        }
        if items.is_empty() || items.len() > MAX_FLOW_STEPS {
            let why = if items.is_empty() { "the list is empty".to_string() } else { format!("{} steps", items.len()) };
            self.err(&loc, key, format!("1 to {MAX_FLOW_STEPS} steps"), why);
            return Got::Bad;
        }
        if steps.len() != items.len() {
            return Got::Bad;
        }
        if let Err((i, why)) = check_order(&steps) {
            self.err(&locs[i], key, "steps in an order a thread can run them, over and over", why);
            return Got::Bad;
        }
        Got::Ok(steps, loc)
    }

    /// A flow's workload: the keys of a one-operation workload it replaces are refused, and
    /// it needs the files of a [dataset].
    pub(super) fn flow_rules(&mut self, flow: &Got<Vec<FlowStep>>, others: &[(Loc, &str)], has_dataset: bool) {
        let Got::Ok(_, floc) = flow else { return };
        for (loc, key) in others.iter().filter(|(l, _)| !matches!(l, Loc::Default)) {
            let note = format!("the flow's steps say what each thread does and with what size; `{key}` is also set");
            self.err(loc, &format!("workload.{key}"), format!("either flow or {key}, not both"), note);
        }
        if !has_dataset {
            let note = "a flow works on the files of a [dataset] (files, sizes, prealloc)";
            self.err(floc, "workload.flow", "a flow with a [dataset]", note);
        }
    }

    /// `sizes = "gamma:MEAN:SHAPE"`: None when the value is not of that form (then it is a
    /// size list); Some(Bad) when it is and is wrong.
    pub(super) fn gamma_sizes(&mut self, key: &str) -> Option<Got<SizeGamma>> {
        let (raw, loc) = self.raw(key)?;
        let text = match raw {
            Raw::Flag(t) => t,
            Raw::Toml(item) => item.as_str()?,
        };
        let rest = text.trim().strip_prefix("gamma")?;
        let parsed = rest.strip_prefix(':').and_then(|r| r.split_once(':')).and_then(|(mean, shape)| {
            let mean = parse_size(mean.trim()).ok().filter(|m| (1..=64 << 30).contains(m))?;
            let shape = shape.trim().parse::<f64>().ok().filter(|s| (0.01..=100.0).contains(s))?;
            Some(SizeGamma { mean_bytes: mean, shape })
        });
        Some(match parsed {
            Some(g) => Got::Ok(g, loc),
            None => {
                self.err(&loc, key, GAMMA_FORM, format!("\"{text}\""));
                Got::Bad
            }
        })
    }
}

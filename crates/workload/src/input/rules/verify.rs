//! Verify: data validation needs an engine that keeps data, one host, no pattern, and block
//! sizes that cover whole verify blocks.

use super::*;

impl<'a> Ctx<'a> {
    /// The verify rules; the verify block as given.
    pub(super) fn verify_rules(&mut self, top: &Top, run: &mut Run) {
        let (engine, hosts, patterned, all_bs, text) =
            (run.engine, &run.hosts, run.patterned, &run.all_bs, self.text());
        if let Got::Ok(mode, loc) = &top.verify {
            if !mode.is_off() {
                let refuse = if engine.is_some_and(|e| !e.spec().caps.does_io) {
                    Some("engine null stores nothing to read back")
                } else if hosts.as_ref().is_some_and(|h| !h.is_empty()) {
                    Some("each host keeps its own record of the blocks it wrote, so blocks written by one host and read by another cannot be checked: verify on one host")
                } else if patterned {
                    Some("a pattern workload draws its offsets by picture, not by block")
                } else {
                    None
                };
                if let Some(why) = refuse {
                    self.err(loc, "verify", "verify = \"off\" here", why);
                }
            }
        }
        let verify_block = match &top.verify_block {
            Got::Ok(b, loc) => {
                let ok = (u64::from(crate::plan::MIN_VERIFY_BLOCK)..=u64::from(crate::plan::MAX_VERIFY_BLOCK))
                    .contains(b)
                    && b % 512 == 0;
                if !ok {
                    self.err(loc, "verify_block", "a multiple of 512 bytes from 512 to 64m, like \"4k\"", "");
                }
                ok.then_some(*b as u32)
            }
            _ => None,
        };
        if matches!(&top.verify, Got::Ok(m, _) if !m.is_off()) {
            let sizes: Vec<u64> = all_bs.iter().map(|e| e.bs.bytes).collect();
            let block = verify_block.unwrap_or_else(|| crate::plan::default_verify_block(&sizes));
            // A default that is no multiple of a sector: the sizes themselves must be.
            let block = if block % crate::plan::MIN_VERIFY_BLOCK == 0 { block } else { crate::plan::MIN_VERIFY_BLOCK };
            for e in all_bs.iter().filter(|e| e.bs.bytes % u64::from(block) != 0) {
                let note = format!(
                    "with verify on, every transfer covers whole verify blocks of {} ({}); {} is not a multiple of it",
                    format_size(u64::from(block)),
                    match top.verify_block.loc() {
                        Loc::Default =>
                            "the greatest common divisor of the block sizes, at least 512 bytes".to_string(),
                        l => format!("verify_block, {}", l.describe(text)),
                    },
                    format_size(e.bs.bytes),
                );
                self.err(&e.loc.clone(), "bs", format!("a multiple of {block} bytes with verify on"), note);
            }
        }
        run.verify_block = verify_block;
    }
}

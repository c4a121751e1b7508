//! Which rules can decide an action, found without testing every rule.
//!
//! [`Policy::evaluate`](super::Policy::evaluate) takes the first rule, in
//! precedence order, that applies to the action's operation and whose
//! conditions all hold. Most rules of a pack name the programs they are
//! about (`program = ["git"]`), and a `program` test holds only for an
//! exec whose program is one of those names. So the rules worth testing
//! for an action are those of its operation that name no program, and for
//! an exec, those naming its program; [`Selector`] keeps both lists in
//! precedence order and merges them, which gives the same first match as
//! testing every rule, while an exec of `ls` tests a handful of rules
//! instead of every exec rule.

use std::collections::HashMap;

use super::compile::op_bit;
use super::matcher::{Field, Operator, Test, TextTest};
use super::Rule;
use crate::record::Op;

/// Rule indices (into the policy's rules), ascending.
type Indices = Vec<u32>;

#[derive(Debug, Default)]
pub(crate) struct Selector {
    /// Per operation (its bit's position, [`op_bit`]): the rules applying
    /// to it that name no program.
    open: Vec<Indices>,
    /// Per program name: the rules whose `program` test names it.
    named: HashMap<String, Indices>,
}

/// The program names a rule is limited to: the values of a positive
/// `program` test when every one is a plain word (no glob).
fn named_programs(r: &Rule) -> Option<&[String]> {
    r.conditions.iter().find_map(|c| {
        if c.field != Field::Program {
            return None;
        }
        match (&c.operator, &c.test) {
            (Operator::Glob, Test::Text(TextTest::Glob(g))) => g.only_literals(),
            (Operator::Equal, Test::Text(TextTest::Equal(v))) => Some(v.as_slice()),
            _ => None,
        }
    })
}

impl Selector {
    pub fn build(rules: &[Rule]) -> Selector {
        let mut s = Selector {
            open: vec![Vec::new(); Op::ALL.len()],
            named: HashMap::new(),
        };
        for (i, r) in rules.iter().enumerate() {
            let i = i as u32;
            match named_programs(r) {
                Some(names) => {
                    for n in names {
                        let list = s.named.entry(n.clone()).or_default();
                        if list.last() != Some(&i) {
                            list.push(i);
                        }
                    }
                }
                None => {
                    for op in Op::ALL {
                        if r.applies_to(op) {
                            s.open[op_bit(op).trailing_zeros() as usize].push(i);
                        }
                    }
                }
            }
        }
        s
    }

    /// The rules that can match an action of operation `op` whose program
    /// names (for an exec) are `programs`, in precedence order. A named
    /// rule may not apply to `op`: the caller tests that as for any rule.
    pub fn candidates<'s>(&'s self, op: Op, programs: &[Option<&str>]) -> Candidates<'s> {
        let open = self
            .open
            .get(op_bit(op).trailing_zeros() as usize)
            .map_or(&[][..], Vec::as_slice);
        let mut lists: [&'s [u32]; 3] = [open, &[], &[]];
        if op == Op::Exec {
            for (slot, p) in lists[1..].iter_mut().zip(programs) {
                if let Some(l) = p.and_then(|p| self.named.get(p)) {
                    *slot = l;
                }
            }
        }
        Candidates { lists }
    }
}

/// The ascending merge of up to three ascending lists, each index once.
pub(crate) struct Candidates<'s> {
    lists: [&'s [u32]; 3],
}

impl Iterator for Candidates<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        let next = self.lists.iter().filter_map(|l| l.first()).min().copied()?;
        for l in &mut self.lists {
            if l.first() == Some(&next) {
                *l = &l[1..];
            }
        }
        Some(next as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::Candidates;

    #[test]
    fn candidates_merge_in_order_and_once() {
        let a = [0u32, 3, 7, 9];
        let b = [1u32, 3, 8];
        let c = [3u32, 9, 12];
        let got: Vec<usize> = Candidates {
            lists: [&a, &b, &c],
        }
        .collect();
        assert_eq!(got, vec![0, 1, 3, 7, 8, 9, 12]);
        let none: Vec<usize> = Candidates {
            lists: [&[], &[], &[]],
        }
        .collect();
        assert!(none.is_empty());
    }
}

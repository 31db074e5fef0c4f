//! The dependency graph of a history (Adya's, as Elle infers it from
//! list reads) and its cycles.
//!
//! Edges between transactions that took effect (committed, or unknown
//! but seen): ww (the key's next version after one's append is the
//! other's), wr (one's read ends with the other's append), rw (one read
//! a version that the other's append came right after: the
//! anti-dependency), and rt (one completed before the other began: real
//! time, for the stale reads a strict-serializable system must not
//! show). Every cycle is an anomaly; which edges it needs says which
//! (`Class`). Cycles are searched per strongly connected component, one
//! example per class and component.

use super::history::{Outcome, Txn, TxnId};
use super::versions::Versions;
use super::Class;
use std::collections::{HashMap, HashSet, VecDeque};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dep {
    WW,
    WR,
    RW,
    RT,
}

impl Dep {
    pub fn label(self) -> &'static str {
        match self {
            Dep::WW => "ww",
            Dep::WR => "wr",
            Dep::RW => "rw",
            Dep::RT => "rt",
        }
    }
}

/// One step of a cycle: `from` -dep-> `to`.
pub type Step = (TxnId, Dep, TxnId);

/// Start edges tried per class and component: a component of thousands
/// of transactions (REPEATABLE READ without snapshot isolation makes
/// them) is not searched edge by edge; one example per class is enough.
const ATTEMPTS: usize = 200;

/// Search states one class may visit in one component, over all its
/// attempts. A breadth-first search that finds no cycle of its class
/// visits the whole component: in a component of most of a history (lost
/// appends after a whole-cluster crash tie the history into one) 200 of
/// them took longer than the run. About a second's work; a search cut
/// short says so instead of passing for "none".
const BUDGET: usize = 4_000_000;

/// How a search for a class's cycle ended.
#[derive(Debug, PartialEq)]
pub enum Search {
    Found(Vec<Step>),
    None,
    /// The budget ran out first: the class may have a cycle here.
    Stopped,
}

pub struct Graph {
    out: Vec<Vec<(TxnId, Dep)>>,
}

impl Graph {
    pub fn build(history: &[Txn], versions: &Versions) -> Graph {
        let mut g = Graph { out: vec![Vec::new(); history.len()] };
        let took_effect = |t: TxnId| history[t].outcome != Outcome::Aborted;
        for (key, order) in &versions.order {
            for pair in order.windows(2) {
                if let (Some(&a), Some(&b)) = (versions.writer.get(&(*key, pair[0])), versions.writer.get(&(*key, pair[1]))) {
                    if took_effect(a) && took_effect(b) {
                        g.add(a, Dep::WW, b);
                    }
                }
            }
        }
        for o in &versions.observations {
            let order = &versions.order[&o.key];
            let seen = o.len.checked_sub(1).and_then(|i| versions.writer.get(&(o.key, order[i])));
            if let Some(&w) = seen.filter(|w| took_effect(**w)) {
                g.add(w, Dep::WR, o.txn);
            }
            if let Some(&next) = order.get(o.len).and_then(|v| versions.writer.get(&(o.key, *v))) {
                // The version after the one seen is its own writer's next
                // append: that read is G1b (intermediate), not an
                // anti-dependency on the writer it read from.
                if took_effect(next) && seen != Some(&next) {
                    g.add(o.txn, Dep::RW, next);
                }
            }
        }
        g.add_realtime(history);
        for edges in &mut g.out {
            edges.sort_unstable();
            edges.dedup();
        }
        g
    }

    fn add(&mut self, from: TxnId, dep: Dep, to: TxnId) {
        if from != to {
            self.out[from].push((to, dep));
        }
    }

    /// rt edges, transitively reduced: a transaction follows those that
    /// had completed when it began and were not already followed by
    /// another that had too (the frontier), which keeps the edges to
    /// about the number of clients per transaction.
    fn add_realtime(&mut self, history: &[Txn]) {
        let mut events: Vec<(u64, bool, TxnId)> = Vec::new(); // (time, is completion, txn): at one time, beginnings first
        for (id, t) in history.iter().enumerate() {
            if t.outcome == Outcome::Aborted {
                continue;
            }
            events.push((t.invoked, false, id));
            if let (Outcome::Committed, Some(c)) = (t.outcome, t.completed) {
                events.push((c, true, id));
            }
        }
        events.sort_unstable();
        let mut frontier: Vec<TxnId> = Vec::new();
        let mut before: HashMap<TxnId, Vec<TxnId>> = HashMap::new();
        for (_, completion, id) in events {
            if !completion {
                before.insert(id, frontier.clone());
                for &p in &frontier {
                    self.add(p, Dep::RT, id);
                }
                continue;
            }
            let preceded = before.remove(&id).unwrap_or_default();
            frontier.retain(|p| !preceded.contains(p));
            frontier.push(id);
        }
    }

    /// Strongly connected components of more than one transaction over
    /// the edges of the kinds in `deps` (Tarjan's, without recursion: a
    /// history has many thousands). A cycle of a class lies in one
    /// component of its own kinds' edges, and those are smaller, often
    /// much smaller, than the components of every edge.
    pub fn components(&self, deps: &[Dep]) -> Vec<Vec<TxnId>> {
        let n = self.out.len();
        let (mut index, mut low, mut on_stack) = (vec![usize::MAX; n], vec![0; n], vec![false; n]);
        let (mut stack, mut found, mut next) = (Vec::new(), Vec::new(), 0);
        for root in 0..n {
            if index[root] != usize::MAX {
                continue;
            }
            let mut work: Vec<(TxnId, usize)> = vec![(root, 0)];
            while let Some(&mut (v, ref mut edge)) = work.last_mut() {
                if *edge == 0 {
                    index[v] = next;
                    low[v] = next;
                    next += 1;
                    stack.push(v);
                    on_stack[v] = true;
                }
                if let Some(&(w, dep)) = self.out[v].get(*edge) {
                    *edge += 1;
                    if !deps.contains(&dep) {
                        continue;
                    }
                    if index[w] == usize::MAX {
                        work.push((w, 0));
                    } else if on_stack[w] {
                        low[v] = low[v].min(index[w]);
                    }
                    continue;
                }
                work.pop();
                if let Some(&(parent, _)) = work.last() {
                    low[parent] = low[parent].min(low[v]);
                }
                if low[v] == index[v] {
                    let mut component = Vec::new();
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        component.push(w);
                        if w == v {
                            break;
                        }
                    }
                    if component.len() > 1 {
                        found.push(component);
                    }
                }
            }
        }
        found
    }

    /// A cycle of `class` inside `component`, if the first ATTEMPTS of
    /// its start edges find one.
    pub fn cycle(&self, component: &[TxnId], class: Class) -> Search {
        self.cycle_within(component, class, BUDGET)
    }

    fn cycle_within(&self, component: &[TxnId], class: Class, mut budget: usize) -> Search {
        let inside: HashSet<TxnId> = component.iter().copied().collect();
        let start = class.start();
        let inside = &inside;
        let starts = component.iter().flat_map(|&a| self.out[a].iter().filter(move |(b, d)| *d == start && inside.contains(b)).map(move |&(b, d)| (a, d, b)));
        for first in starts.take(ATTEMPTS) {
            match self.close(inside, first, class, &mut budget) {
                Search::None => {}
                found_or_stopped => return found_or_stopped,
            }
        }
        Search::None
    }

    /// Breadth first from the start edge's head back to its tail, over
    /// states that count what the path used so far; the shortest path
    /// that satisfies `class` closes the cycle.
    fn close(&self, inside: &HashSet<TxnId>, first: Step, class: Class, budget: &mut usize) -> Search {
        let (a, dep, b) = first;
        let begin = class.project(Used::first(dep));
        let mut parent: HashMap<(TxnId, Used), (TxnId, Used, Dep)> = HashMap::new();
        let mut queue = VecDeque::from([(b, begin)]);
        let mut seen = HashSet::from([(b, begin)]);
        while let Some((v, used)) = queue.pop_front() {
            if *budget == 0 {
                return Search::Stopped;
            }
            *budget -= 1;
            if v == a {
                // A path that comes back to a transaction it passed is two
                // cycles, each found on its own: only a simple one counts
                // (twice round one rw edge is no G2-item).
                let steps = class.satisfied(used).then(|| unwind(first, &parent, (v, used), begin));
                if let Some(steps) = steps.filter(|s| is_simple(s)) {
                    return Search::Found(steps);
                }
                continue;
            }
            for &(w, d) in &self.out[v] {
                let next = class.project(used.with(d));
                if !inside.contains(&w) || !class.allows(next) || !seen.insert((w, next)) {
                    continue;
                }
                parent.insert((w, next), (v, used, d));
                queue.push_back((w, next));
            }
        }
        Search::None
    }
}

fn is_simple(steps: &[Step]) -> bool {
    let mut seen = HashSet::new();
    steps.iter().all(|(from, ..)| seen.insert(*from))
}

fn unwind(first: Step, parent: &HashMap<(TxnId, Used), (TxnId, Used, Dep)>, mut at: (TxnId, Used), begin: Used) -> Vec<Step> {
    let mut steps = Vec::new();
    while at != (first.2, begin) {
        let &(from, used, dep) = &parent[&at];
        steps.push((from, dep, at.0));
        at = (from, used);
    }
    steps.push(first);
    steps.reverse();
    steps
}

/// What a path has used: rw edges (0, 1, 2 meaning two or more),
/// whether any wr and any rt edge, and where its rw edges sit: whether
/// its first and its last edge are rw, and whether two came in a row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Used {
    pub rw: u8,
    pub wr: bool,
    pub rt: bool,
    pub first_rw: bool,
    pub last_rw: bool,
    pub adjacent: bool,
}

impl Used {
    /// A path of one edge.
    fn first(dep: Dep) -> Used {
        Used { first_rw: dep == Dep::RW, ..Used::default() }.with(dep)
    }

    fn with(self, dep: Dep) -> Used {
        let is_rw = dep == Dep::RW;
        let placed = Used {
            last_rw: is_rw,
            adjacent: self.adjacent || (is_rw && self.last_rw),
            ..self
        };
        match dep {
            Dep::WW => placed,
            Dep::WR => Used { wr: true, ..placed },
            Dep::RW => Used { rw: (self.rw + 1).min(2), ..placed },
            Dep::RT => Used { rt: true, ..placed },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_g_single_cycles_through_one_transaction_are_no_g2_item() {
        // T0 -rw-> T1 -wr-> T0 and T1 -rw-> T2 -wr-> T1: round both, a
        // path meets two rw edges, but passes T1 twice.
        let mut g = Graph { out: vec![Vec::new(); 3] };
        for (a, d, b) in [(0, Dep::RW, 1), (1, Dep::WR, 0), (1, Dep::RW, 2), (2, Dep::WR, 1)] {
            g.add(a, d, b);
        }
        assert!(matches!(g.cycle(&[0, 1, 2], Class::GSingle), Search::Found(_)));
        assert_eq!(g.cycle(&[0, 1, 2], Class::G2Item), Search::None);
    }

    /// A G-single cycle round a ring of 100 ww edges: found with room,
    /// said to be cut short (not absent) without.
    #[test]
    fn a_search_that_runs_out_of_budget_says_so() {
        let mut g = Graph { out: vec![Vec::new(); 101] };
        g.add(0, Dep::RW, 1);
        for t in 1..100 {
            g.add(t, Dep::WW, t + 1);
        }
        g.add(100, Dep::WW, 0);
        let all: Vec<TxnId> = (0..=100).collect();
        assert!(matches!(g.cycle_within(&all, Class::GSingle, 1_000), Search::Found(s) if s.len() == 101));
        assert_eq!(g.cycle_within(&all, Class::GSingle, 50), Search::Stopped);
        // A search that ends as its budget does is done, not cut short.
        let mut no_cycle = Graph { out: vec![Vec::new(); 2] };
        no_cycle.add(0, Dep::RW, 1);
        assert_eq!(no_cycle.cycle_within(&[0, 1], Class::GSingle, 1), Search::None);
    }

    /// A cycle that needs a kind of edge is no component of a class
    /// without it.
    #[test]
    fn components_keep_to_the_kinds_of_edge_given() {
        let mut g = Graph { out: vec![Vec::new(); 3] };
        for (a, d, b) in [(0, Dep::WW, 1), (1, Dep::WW, 2), (2, Dep::RT, 0)] {
            g.add(a, d, b);
        }
        assert_eq!(g.components(Class::G0.deps()), Vec::<Vec<TxnId>>::new());
        assert_eq!(g.components(Class::G0Realtime.deps()).len(), 1);
    }
}

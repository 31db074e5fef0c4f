//! `lockstep top`: the nodes of a cluster live, one row each (state,
//! queues, flow control, commit rates, apply lag, leader), refreshed every
//! second. Works against Galera nodes too: what Galera does not report
//! shows as "-". A terminal UI on ratatui; `--once` prints one frame as
//! text instead (scripts, tests, a terminal that is not one).

mod sample;

use clap::Parser;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Block, Row, Table, Widget};
use sample::{Sample, Source, Target, HEADER};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(name = "lockstep top", about = "The nodes of a cluster live: state, queues, flow control, commit rate, apply lag, leader")]
pub struct Cli {
    /// The local cluster made by `lockstep cluster up` (its nodes' sockets).
    #[arg(long, env = "LOCKSTEP_CLUSTER_DIR", default_value = crate::cluster::DEFAULT_DIR)]
    dir: PathBuf,
    /// A server's Unix socket instead (repeatable; any MariaDB node).
    #[arg(long = "socket", value_name = "PATH")]
    sockets: Vec<PathBuf>,
    /// A server's HOST:PORT instead (repeatable).
    #[arg(long = "host", value_name = "HOST:PORT")]
    hosts: Vec<String>,
    #[arg(long, default_value = "root")]
    user: String,
    #[arg(long)]
    password: Option<String>,
    /// Seconds between readings.
    #[arg(long, default_value_t = 1.0)]
    interval: f64,
    /// Print one frame (after two readings, for the rates) and exit.
    #[arg(long)]
    once: bool,
}

pub fn run_cli(args: Cli) -> ExitCode {
    let sources = match sources(&args) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("lockstep top: {e}");
            return ExitCode::from(2);
        }
    };
    let interval = Duration::from_secs_f64(args.interval.max(0.1));
    let title = format!(" lockstep top: {} node(s), every {:.1} s, q quits ", sources.len(), interval.as_secs_f64());
    let mut watch = Watch { sources, last: Vec::new(), prev: Vec::new() };
    if args.once {
        watch.read();
        std::thread::sleep(interval);
        watch.read();
        print!("{}", text(&watch.table(&title), 132, watch.sources.len() as u16 + 3));
        return ExitCode::SUCCESS;
    }
    match live(&mut watch, &title, interval) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lockstep top: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The nodes to watch: sockets and hosts given, else the local cluster's.
fn sources(args: &Cli) -> Result<Vec<Source>, String> {
    let pass = args.password.as_deref();
    let mut out: Vec<Source> = args.sockets.iter().map(|p| Source::new(p.display().to_string(), Target::Socket(p.clone()), &args.user, pass)).collect();
    for h in &args.hosts {
        let (host, port) = h.rsplit_once(':').ok_or_else(|| format!("--host {h}: expected HOST:PORT"))?;
        let port = port.parse().map_err(|_| format!("--host {h}: {port} is not a port"))?;
        out.push(Source::new(h.clone(), Target::Tcp { host: host.into(), port }, &args.user, pass));
    }
    if !out.is_empty() {
        return Ok(out);
    }
    let cluster = crate::cluster::Cluster::open(&args.dir).map_err(|e| format!("no cluster in {} ({e}); give --socket or --host", args.dir.display()))?;
    Ok(cluster.nodes().map(|n| Source::new(n.name(), Target::Socket(n.socket()), &args.user, pass)).collect())
}

struct Watch {
    sources: Vec<Source>,
    last: Vec<Sample>,
    prev: Vec<Sample>,
}

impl Watch {
    fn read(&mut self) {
        self.prev = std::mem::take(&mut self.last);
        self.last = self.sources.iter_mut().map(Source::sample).collect();
    }

    fn table(&self, title: &str) -> Table<'static> {
        let named: Vec<(&str, &Sample)> = self.sources.iter().map(|s| s.label.as_str()).zip(&self.last).collect();
        let leader = sample::leader(&named);
        let rows = named.iter().enumerate().map(|(i, (label, cur))| Row::new(sample::row(label, self.prev.get(i), cur, leader.clone())));
        let widths = [14, 16, 12, 8, 7, 7, 10, 10, 10, 8, 7, 11].map(Constraint::Length);
        let why: Vec<String> = named.iter().filter_map(|(label, s)| Some(format!("{label}: {}", s.error.as_ref()?))).collect();
        let mut block = Block::bordered().title(title.to_string());
        if !why.is_empty() {
            block = block.title_bottom(format!(" {} ", why.join("; ")));
        }
        Table::new(rows, widths).header(Row::new(HEADER).style(Style::default().add_modifier(Modifier::BOLD))).block(block)
    }
}

/// The interactive view: redraws after each reading until q, Esc or
/// Ctrl-C; the terminal is restored however it ends.
fn live(watch: &mut Watch, title: &str, interval: Duration) -> std::io::Result<()> {
    let mut terminal = ratatui::try_init()?;
    let result = (|| loop {
        watch.read();
        let table = watch.table(title);
        terminal.draw(|f| f.render_widget(table, f.area()))?;
        let until = Instant::now() + interval;
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            if event::poll(left)? {
                if let Event::Key(k) = event::read()? {
                    let ctrl_c = k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                    if k.kind == KeyEventKind::Press && (ctrl_c || matches!(k.code, KeyCode::Char('q') | KeyCode::Esc)) {
                        return Ok(());
                    }
                }
            }
        }
    })();
    ratatui::restore();
    result
}

/// A widget drawn into `width` x `height` cells, as lines of text.
fn text(widget: &Table<'static>, width: u16, height: u16) -> String {
    let area = Rect::new(0, 0, width, height);
    let mut buf = Buffer::empty(area);
    widget.clone().render(area, &mut buf);
    let mut out = String::new();
    for y in 0..height {
        let line: String = (0..width).map(|x| buf[(x, y)].symbol().to_string()).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

//! An Oxidis server driven in-process (no socket): commands go through
//! `dispatch` as a connection sends them, and the `Server` stays reachable
//! for the persistence API (`persist::rdb::write_dataset`, `load_dataset`).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use oxidis::command::args::Argv;
use oxidis::command::dispatch::dispatch;
use oxidis::resp::value::{parse_value, Value};
use oxidis::server::client::{Client, ClientCell, ConnKind};
use oxidis::server::Server;

pub struct InProc {
    pub srv: Server,
    cell: Rc<ClientCell>,
}

impl InProc {
    /// A server with redis-server style flags.
    pub fn new(flags: &[&str]) -> InProc {
        let args: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
        let config = oxidis::config::from_args(&args).expect("flags parse");
        let mut srv = Server::new(config);
        let id = srv.next_client_id;
        srv.next_client_id += 1;
        let client = Client::new(
            id,
            "127.0.0.1:40000".into(),
            "127.0.0.1:6379",
            ConnKind::Tcp,
            false,
        );
        let cell = Rc::new(ClientCell {
            state: RefCell::new(client),
            wake: Default::default(),
            kill: Cell::new(false),
        });
        srv.clients.insert(id, cell.clone());
        InProc { srv, cell }
    }

    /// Runs one command; returns its (single) reply.
    pub fn cmd(&mut self, argv: &[&[u8]]) -> Value {
        let argv = Argv::from_slices(argv.iter().copied());
        let mut c = self.cell.state.borrow_mut();
        dispatch(&mut self.srv, &mut c, &argv.args());
        let out = c.reply.buf.split().to_vec();
        parse_value(&out)
            .expect("a reply")
            .expect("a complete reply")
            .0
    }
}

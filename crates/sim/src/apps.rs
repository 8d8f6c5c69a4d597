//! The applications of a scenario's flows: the sans-IO [`App`]s of `satpep_proto::net`, built
//! from a flow's `app` table.

use satpep_proto::net::App;
use satpep_proto::Instant;
use satpep_scenario::AppSpec;

/// Both sides of a flow's application. A UDP flow has no TCP application (the simulator
/// builds its source and sink itself); it gets two sinks, never used.
pub fn apps_for(spec: &AppSpec, start: Instant) -> (App, App) {
    match *spec {
        AppSpec::Bulk { bytes, duration } => (
            App::BulkSender {
                bytes: bytes.map(|b| b.bytes()),
                until: duration.map(|d| start + d),
                written: 0,
                closed: false,
            },
            App::Sink,
        ),
        AppSpec::RequestResponse {
            request,
            response,
            count,
            think,
        } => (
            App::RequestClient {
                request: request.bytes(),
                response: response.bytes(),
                count,
                think,
                sent: 0,
                next_at: Some(start),
            },
            App::ResponseServer {
                request: request.bytes(),
                response: response.bytes(),
                answered: 0,
                backlog: 0,
            },
        ),
        AppSpec::Udp { .. } => (App::Sink, App::Sink),
    }
}

use super::*;

/// A whole minute of Unix time: 2001-09-09 01:46:00 UTC.
const B: u64 = 999_999_960;

fn args(words: &[&str]) -> ControlArgs {
    let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
    control_args(&words).unwrap()
}

/// A log whose minutes are worked out by hand: three addresses start waiting
/// in minute 0; in minute 1 two of them win (after 40 s, in the minute's first
/// second, and after 50 s) and a third
/// address is let straight in; minute 2 has one line, at 7 %.
fn hand_log() -> String {
    [
        format!("waitingroom t={} decision=anon uid=10.0.0.1 p=5 exp={} path=/", B + 20, B + 600),
        format!("waitingroom t={} decision=anon uid=10.0.0.2 p=5 exp={} path=/", B + 20, B + 600),
        "Viceroy's own line, not the room's".to_string(),
        format!("waitingroom t={} decision=anon uid=10.0.0.3 p=5 exp={} path=/", B + 30, B + 600),
        format!(
            "waitingroom_log :: waitingroom t={} decision=allow uid=10.0.0.2 p=5 session=new transition=lottery-won exp={} path=/",
            B + 60,
            B + 700
        ),
        format!(
            "waitingroom t={} decision=allow uid=10.0.0.1 p=5 session=new transition=lottery-won exp={} path=/",
            B + 70,
            B + 700
        ),
        format!("waitingroom t={} decision=allow uid=10.0.0.9 p=5 session=new exp={} path=/", B + 110, B + 710),
        format!("waitingroom t={} decision=wait uid=10.0.0.3 p=7 exp={} path=/", B + 130, B + 600),
    ]
    .join("\n")
}

#[test]
fn a_replayed_minute_is_the_one_worked_out_by_hand() {
    let history = replay(
        hand_log().as_bytes(),
        &args(&["--target-per-minute", "30", "--wait-period", "30"]),
    )
    .unwrap();
    assert_eq!(history.start, B);
    assert_eq!(history.rooms, [SERVICE_ROOM]);
    assert_eq!((history.lines, history.bad_lines), (8, 1));
    assert_eq!(history.minutes.len(), 3);
    let m: Vec<&RoomMinute> = history.minutes.iter().map(|m| &m[0]).collect();
    assert_eq!(
        *m[0],
        RoomMinute {
            new_sessions: 0,
            target: 30.0,
            waiting: 3,
            percentage_micros: Some(50_000),
            cutoff_ms: None,
            p95_ms: None,
            p95_bound_ms: None,
            waits: vec![],
        }
    );
    assert_eq!(
        *m[1],
        RoomMinute {
            new_sessions: 3,
            target: 30.0,
            waiting: 1,
            percentage_micros: Some(50_000),
            cutoff_ms: None,
            p95_ms: None,
            p95_bound_ms: None,
            waits: vec![0, 40, 50],
        }
    );
    assert_eq!(
        (m[1].wait_quantile(0.5), m[1].wait_quantile(0.9)),
        (Some(40), Some(50))
    );
    assert_eq!(
        (m[2].new_sessions, m[2].percentage_micros),
        (0, Some(70_000))
    );
}

/// The rows of the report's table of `room`'s minutes, each cell's text.
fn table_rows(html: &str, room: &str) -> Vec<Vec<String>> {
    let start = html
        .find(&format!("<table class=\"minutes\" data-room=\"{room}\">"))
        .expect("the room's table");
    let body = &html[start..];
    let body = &body[body.find("<tbody>").unwrap()..body.find("</tbody>").unwrap()];
    body.split("<tr>")
        .skip(1)
        .map(|row| {
            let row = row.replace("</th>", "</td>");
            let cells: Vec<&str> = row.split("</td>").collect();
            cells[..cells.len() - 1]
                .iter()
                .map(|cell| cell.rsplit('>').next().unwrap().to_string())
                .collect()
        })
        .collect()
}

#[test]
fn the_report_shows_the_figures_it_was_drawn_from() {
    let history = replay(
        hand_log().as_bytes(),
        &args(&["--target-per-minute", "30", "--wait-period", "30"]),
    )
    .unwrap();
    let html = html(&history, "A test <event>", "hand.log").unwrap();
    let rows = table_rows(&html, SERVICE_ROOM);
    assert_eq!(
        rows,
        [
            ["01:46", "0", "30", "3", "0", "–", "–", "–", "5"],
            ["01:47", "3", "30", "1", "3", "40", "50", "50", "5"],
            ["01:48", "0", "30", "1", "0", "–", "–", "–", "7"],
        ]
    );
    assert!(html.contains("<title>A test &lt;event&gt;</title>"));
    // Every figure names itself, and nothing is fetched.
    assert_eq!(html.matches("<svg").count(), 2);
    assert_eq!(
        html.matches("<svg").count(),
        html.matches(" role=\"img\"").count()
    );
    assert!(html.contains("<title id=\"") && html.contains("the event a minute at a time</title>"));
    assert!(!html.contains("src=") && !html.contains("href=\"http"));
}

#[test]
fn alerts_are_raised_and_cleared_on_the_logs_clock() {
    // 8 minutes of a synthetic crowd at 10 % against a target far below what it
    // admits: admissions-off-target within the first two minutes, still raised
    // at the log's end.
    let mut crowd = crate::synthetic::Crowd::new(B, 7);
    crowd.arrivals_per_second = 5;
    let log = crowd.lines(480).join("\n");
    let history = replay(
        log.as_bytes(),
        &args(&[
            "--target-per-minute",
            "2",
            "--wait-period",
            "30",
            "--tick",
            "10",
        ]),
    )
    .unwrap();
    assert_eq!(history.minutes.len(), 8);
    let off: Vec<&Raised> = history
        .alerts
        .iter()
        .filter(|a| a.name == "admissions-off-target")
        .collect();
    assert!(!off.is_empty(), "{:?}", history.alerts);
    assert!(off[0].from > B && off[0].from <= B + 120, "{:?}", off[0]);
    for pair in off.windows(2) {
        assert!(
            pair[0].to < pair[1].from,
            "cleared before raised again: {off:?}"
        );
    }
    let last = off.last().unwrap();
    assert_eq!(last.to, B + 480, "open at the end: closed with the log");
    assert!(last.to - last.from >= 300, "{last:?}");
    let html = html(&history, "t", "s").unwrap();
    let alerts = &html[html.find("<table class=\"alerts\">").unwrap()..];
    assert!(alerts.contains("<th scope=\"row\" class=\"l\">admissions-off-target</th>"));
    for name in timeline_rows() {
        // As plotters writes a label.
        let label = format!(">\n{}\n</text>", name.replace('\'', "&apos;"));
        assert!(html.contains(&label), "{name} on the timeline");
    }
}

#[test]
fn the_edge_stale_lines_make_spans_of_their_own() {
    let line = |t: u64| {
        format!(
            "waitingroom t={t} decision=wait uid=10.0.0.1 p=5 exp={} path=/ ALERT=controller-stale",
            B + 900
        )
    };
    let log = [line(B + 5), line(B + 9), line(B + 200), line(B + 201)].join("\n");
    let history = replay(log.as_bytes(), &args(&["--target-per-minute", "30"])).unwrap();
    let edge: Vec<(u64, u64)> = history
        .alerts
        .iter()
        .filter(|a| a.name == EDGE_STALE)
        .map(|a| (a.from - B, a.to - B))
        .collect();
    assert_eq!(edge, [(5, 10), (200, 202)]);
}

#[test]
fn the_controllers_options_are_wrctl_controls() {
    let a = args(&["--target-per-minute", "600", "--queueing", "fifo"]);
    assert!(a.dry_run && a.fifo());
    // Pasted with its sink: read, not used.
    let a = args(&["--target-per-minute", "600", "--config-file", "x.json"]);
    assert!(!a.dry_run);
    let words = ["--target-per-minute".to_string(), "0".to_string()];
    assert!(
        control_args(&words)
            .unwrap_err()
            .contains("--target-per-minute")
    );
    let r = parse(&[
        "demo.log",
        "--out",
        "r.html",
        "--",
        "--target-per-minute",
        "30",
    ])
    .unwrap();
    assert_eq!(r.controller, ["--target-per-minute", "30"]);
    assert!(
        parse(&["demo.log"]).is_err(),
        "the controller's options are required"
    );
}

#[test]
fn a_log_without_room_lines_has_nothing_to_report() {
    let history = replay(
        "nothing\nhere\n".as_bytes(),
        &args(&["--target-per-minute", "30"]),
    )
    .unwrap();
    assert!(history.minutes.is_empty());
    assert_eq!((history.lines, history.bad_lines), (2, 2));
}

/// Two rooms in one report: the service room by the percentage and a FIFO room
/// `drops`, whose minutes carry the cutoff its lines said last (and no
/// percentage of the other room's), a table and a cutoff plot of their own.
#[test]
fn a_fifo_room_beside_the_service_room_has_its_cutoff_and_table() {
    let cutoff = |s: u64| (B + s) * 1000;
    let log = [
        format!("waitingroom t={} decision=anon uid=10.0.0.1 p=5 exp={} path=/", B + 5, B + 600),
        format!(
            "waitingroom t={} decision=wait uid=10.0.1.1 room=drops p=50 exp={} arr={} cutoff={} path=/drops/1",
            B + 10,
            B + 300,
            cutoff(9),
            cutoff(0)
        ),
        format!(
            "waitingroom t={} decision=wait uid=10.0.1.2 room=drops p=50 exp={} arr={} cutoff={} path=/drops/1",
            B + 50,
            B + 300,
            cutoff(40),
            cutoff(8)
        ),
        format!(
            "waitingroom t={} decision=allow uid=10.0.1.1 room=drops p=50 session=new transition=cutoff-reached exp={} arr={} cutoff={} path=/drops/1",
            B + 70,
            B + 900,
            cutoff(9),
            cutoff(20)
        ),
        format!("waitingroom t={} decision=wait uid=10.0.0.1 p=7 exp={} path=/", B + 80, B + 600),
    ]
    .join("\n");
    let history = replay(
        log.as_bytes(),
        &args(&[
            "--service-room",
            "--target-per-minute",
            "30",
            "--room",
            "drops:target=20,queueing=fifo",
        ]),
    )
    .unwrap();
    assert_eq!(history.rooms, [SERVICE_ROOM, "drops"]);
    assert_eq!(history.fifo, [false, true]);
    let drops: Vec<&RoomMinute> = history.minutes.iter().map(|m| &m[1]).collect();
    assert_eq!(
        drops.iter().map(|m| m.cutoff_ms).collect::<Vec<_>>(),
        [Some(cutoff(8)), Some(cutoff(20))]
    );
    assert_eq!((drops[0].new_sessions, drops[1].new_sessions), (0, 1));
    assert_eq!((drops[0].target, drops[1].target), (20.0, 20.0));
    let service: Vec<&RoomMinute> = history.minutes.iter().map(|m| &m[0]).collect();
    assert_eq!(
        service
            .iter()
            .map(|m| (m.percentage_micros, m.cutoff_ms))
            .collect::<Vec<_>>(),
        [(Some(50_000), None), (Some(70_000), None)]
    );
    let html = html(&history, "Two rooms", "two.log").unwrap();
    assert_eq!(table_rows(&html, "drops").len(), 2);
    assert_eq!(table_rows(&html, SERVICE_ROOM).len(), 2);
    assert!(
        html.contains("the FIFO cutoff in effect"),
        "the drops room's cutoff plot"
    );
    assert_eq!(
        html.matches("<svg").count(),
        html.matches(" role=\"img\"").count()
    );
}

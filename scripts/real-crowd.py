#!/usr/bin/env python3
"""A browser-like crowd against a running room, over real HTTP, from many
loopback addresses: each person has their own 127.0.x.y address and a few tabs
that share one cookie jar (or, with --devices N, are spread over N devices
behind that address, each with a jar of its own); each tab follows the waiting
page's `Refresh` (up to --refresh-jitter seconds late, as a throttled
background tab or a sleeping phone comes back), and once admitted browses a few
pages and closes. A person's tabs open within --tab-spread seconds of their
arrival, each with its own timing, as tabs opened one after another do.
Bounded in time: every tab stops at --duration.
Prints, per minute, the new sessions (distinct allow tokens, as the origin and
the controller count them: the address and the token's `exp`), the people
admitted, and tokens per person side by side, with the totals; with --json,
writes them too. With --target N (new sessions a minute the controller holds)
it also states the Poisson noise of a minute at the target, sqrt(N), and judges
with it: the mean of the minutes after the second within +-10 % of N, and each
of those minutes within N +- 3 sqrt(N). With --app-poll MIN:MAX the
tabs poll on their own timer instead of following `Refresh`, as an app does.
While the room asks a bot toll, a person's first tab to see the check pays it
as the page's script would (the first nonce whose SHA-256 of the challenge's
prefix and the nonce starts with the bits asked, set as the toll cookie), unless
the person is one of the --toll-skippers share, whose tabs never pay: scripts
that skip the work.

    python3 scripts/real-crowd.py --room http://127.0.0.1:7676 --people 300 --duration 300

Linux routes all of 127.0.0.0/8 to the loopback interface, and the room sees
each connection's source address as the visitor.
"""
import argparse
import base64
import hashlib
import http.client
import re
import json
import math
import random
import sys
import threading
import time
import urllib.parse

COOKIE = "waiting_room"
TOLL_COOKIE = "waiting_toll"
TOLL = re.compile(r'data-challenge="([0-9a-f]{64})" data-bits="([0-9]+)" data-cookie="([a-z0-9_-]+)"')


def pay_toll(challenge, bits):
    """(nonce, hashes tried): the first nonce that pays `bits` for `challenge`."""
    prefix = f"waiting-room-toll:{challenge}:".encode()
    nonce = 0
    while True:
        digest = hashlib.sha256(prefix + str(nonce).encode()).digest()
        if int.from_bytes(digest, "big") >> (256 - bits) == 0:
            return nonce, nonce + 1
        nonce += 1


def address(i):
    """The i-th person's source address: 127.0.1.1 upwards, 250 to a /24."""
    return f"127.0.{1 + i // 250}.{1 + i % 250}"


def allow_token(value):
    """(uid, exp) of an allow token's cookie value, or None."""
    try:
        text = base64.b64decode(value, validate=True).decode("ascii")
    except (ValueError, UnicodeDecodeError):
        return None
    fields = dict(p.split("=", 1) for p in text.split("&") if "=" in p)
    if fields.get("dec") != "allow" or "exp" not in fields or "uid" not in fields:
        return None
    return fields["uid"], fields["exp"]


def refresh_after(header):
    """Seconds of a `Refresh: N; url=...` header, or None."""
    if not header:
        return None
    try:
        return max(0.0, float(header.split(";", 1)[0].strip()))
    except ValueError:
        return None


class Tally:
    def __init__(self, start):
        self.start = start
        self.lock = threading.Lock()
        self.tokens = {}  # (uid, exp) -> second first seen
        self.people = {}  # person -> second first admitted
        self.requests = 0
        self.errors = 0
        self.hashes = 0
        self.payments = 0

    def minute(self, t):
        return int((t - self.start) // 60)

    def response(self, person, token, admitted, failed):
        now = time.time()
        with self.lock:
            self.requests += 1
            self.errors += failed
            if token is not None and token not in self.tokens:
                self.tokens[token] = now
            if admitted and person not in self.people:
                self.people[person] = now

    def table(self, minutes):
        rows = []
        for m in range(minutes):
            tokens = sum(1 for t in self.tokens.values() if self.minute(t) == m)
            people = sum(1 for t in self.people.values() if self.minute(t) == m)
            rows.append(
                {
                    "minute": m,
                    "new_sessions": tokens,
                    "people_admitted": people,
                    "tokens_per_person": round(tokens / people, 3) if people else None,
                }
            )
        return rows


def judge(rows, target):
    """The minutes after the second against `target` new sessions a minute, with
    the Poisson noise of a minute at the target, sqrt(target): the mean of those
    minutes within +-10 % of the target, and each within target +- 3 sqrt(target)."""
    sigma = math.sqrt(target)
    low, high = target - 3 * sigma, target + 3 * sigma
    judged = [r["new_sessions"] for r in rows[2:]]
    if not judged:
        return {"target": target, "sigma": sigma, "band": [low, high], "minutes": 0, "met": False}
    mean = sum(judged) / len(judged)
    # The Poisson noise of the mean of k minutes: sqrt(k * target) / k.
    sigma_mean = math.sqrt(len(judged) * target) / len(judged)
    outside = [2 + i for i, n in enumerate(judged) if not low <= n <= high]
    mean_ok = abs(mean / target - 1) <= 0.10
    return {
        "target": target,
        "sigma": round(sigma, 2),
        "band": [round(low, 1), round(high, 1)],
        "minutes": len(judged),
        "mean": round(mean, 2),
        "mean_ratio": round(mean / target, 3),
        "sigma_of_mean_ratio": round(sigma_mean / target, 4),
        "minutes_outside_band": outside,
        "met": mean_ok and not outside,
    }


def tab(args, person, jar, lock, tally, deadline, start_at, seed, skips):
    rng = random.Random(seed)
    host = urllib.parse.urlsplit(args.room)
    source = address(person)
    time.sleep(max(0.0, start_at - time.time()))
    path, browsed = args.path, 0
    while time.time() < deadline:
        with lock:
            cookies = "; ".join(f"{name}={value}" for name, value in jar.items() if not name.startswith("_"))
        headers = {"Cookie": cookies} if cookies else {}
        token, admitted, failed, wait = None, False, False, None
        try:
            conn = http.client.HTTPConnection(host.hostname, host.port, timeout=10, source_address=(source, 0))
            conn.request("GET", path, headers=headers)
            reply = conn.getresponse()
            body = reply.read()
            for name, value in reply.getheaders():
                if name.lower() == "set-cookie" and value.startswith(COOKIE + "="):
                    cookie_value = value[len(COOKIE) + 1 :].split(";", 1)[0]
                    with lock:
                        if "expires=Thu, 01 Jan 1970" in value or not cookie_value:
                            jar.pop(COOKIE, None)
                        else:
                            jar[COOKIE] = cookie_value
                    token = allow_token(cookie_value)
            wait = refresh_after(reply.getheader("Refresh"))
            admitted = reply.status == 200 and wait is None
            conn.close()
            toll = TOLL.search(body.decode("utf-8", "replace")) if not admitted else None
            if toll and not skips:
                challenge, bits, name = toll.group(1), int(toll.group(2)), toll.group(3)
                with lock:
                    owed = jar.get("_paid") != challenge
                    jar["_paid"] = challenge
                if owed:
                    nonce, hashes = pay_toll(challenge, bits)
                    with lock:
                        jar[name] = str(nonce)
                    with tally.lock:
                        tally.hashes += hashes
                        tally.payments += 1
        except OSError:
            failed = True
        if token is not None:
            token = (token[0], token[1])
        tally.response(person, token, admitted, failed)
        if failed:
            time.sleep(1.0)
        elif admitted:
            browsed += 1
            if browsed > args.browse:
                return
            time.sleep(args.browse_every)
        elif args.app_poll:
            # An app's own timer, whatever the page says.
            time.sleep(rng.uniform(*args.app_poll))
        else:
            late = rng.uniform(0, args.refresh_jitter) if args.refresh_jitter else 0.0
            time.sleep((wait if wait is not None else args.poll) + late)


def seconds_range(text):
    """(MIN, MAX) of `MIN:MAX`, 0 < MIN <= MAX."""
    try:
        low, high = (float(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected MIN:MAX seconds") from None
    if not 0 < low <= high:
        raise argparse.ArgumentTypeError(f"{text!r}: expected 0 < MIN <= MAX")
    return low, high


def main():
    global COOKIE
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--room", default="http://127.0.0.1:7676")
    parser.add_argument("--path", default="/events")
    parser.add_argument("--people", type=int, default=300)
    parser.add_argument(
        "--cookie", default=COOKIE, help="the room's cookie (waiting_room_NAME for a named room)"
    )
    parser.add_argument(
        "--first-person", type=int, default=0, help="address offset, so two crowds never share an address"
    )
    parser.add_argument("--tabs", type=int, default=3, help="tabs per person, sharing one cookie jar")
    parser.add_argument(
        "--devices",
        type=int,
        default=1,
        help="devices per person behind their address, each with its own cookie jar; the tabs are dealt out among them",
    )
    parser.add_argument(
        "--refresh-jitter",
        type=float,
        default=0.0,
        help="a tab comes back up to this many seconds (uniform) after the page's Refresh",
    )
    parser.add_argument("--arrive-over", type=float, default=10.0, help="seconds over which people arrive")
    parser.add_argument(
        "--tab-spread",
        "--tab-spread-seconds",
        type=float,
        default=3.0,
        help="seconds over which a person's tabs open (each tab on its own timing from then on)",
    )
    parser.add_argument("--browse", type=int, default=3, help="pages an admitted tab browses before it closes")
    parser.add_argument("--browse-every", type=float, default=3.0)
    parser.add_argument("--poll", type=float, default=5.0, help="seconds between polls when a page has no Refresh")
    parser.add_argument(
        "--app-poll",
        type=seconds_range,
        metavar="MIN:MAX",
        help="poll every MIN..MAX seconds (uniform) instead of following Refresh, as an app does",
    )
    parser.add_argument("--duration", type=float, default=300.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="write the minute table and totals here")
    parser.add_argument(
        "--target",
        type=float,
        help="new sessions a minute the controller holds: judge the minutes after the second against it",
    )
    parser.add_argument(
        "--toll-skippers", type=float, default=0.0, help="share of people whose tabs never pay the bot toll"
    )
    args = parser.parse_args()
    COOKIE = args.cookie
    rng = random.Random(args.seed)
    start = time.time()
    deadline = start + args.duration
    tally = Tally(start)
    threads = []
    for person in range(args.first_person, args.first_person + args.people):
        jars = [({}, threading.Lock()) for _ in range(max(1, args.devices))]
        skips = person < args.first_person + round(args.people * args.toll_skippers)
        arrives = start + rng.uniform(0, args.arrive_over)
        for i in range(args.tabs):
            jar, lock = jars[i % len(jars)]
            opens = arrives + rng.uniform(0, args.tab_spread)
            thread = threading.Thread(
                target=tab,
                args=(args, person, jar, lock, tally, deadline, opens, rng.getrandbits(32), skips),
                daemon=True,
            )
            thread.start()
            threads.append(thread)
    for thread in threads:
        thread.join(max(0.0, deadline - time.time()) + 15)
    minutes = int(args.duration // 60)
    rows = tally.table(minutes)
    verdict = judge(rows, args.target) if args.target else None
    print("minute  new sessions (tokens)  people admitted  tokens per person" + ("  in 3-sigma band" if verdict else ""))
    for row in rows:
        per = "-" if row["tokens_per_person"] is None else f"{row['tokens_per_person']:.2f}"
        line = f"{row['minute']:>6}  {row['new_sessions']:>21}  {row['people_admitted']:>15}  {per:>17}"
        if verdict:
            low, high = verdict["band"]
            line += f"  {'(first two)' if row['minute'] < 2 else 'yes' if low <= row['new_sessions'] <= high else 'NO':>16}"
        print(line)
    tokens, people = len(tally.tokens), len(tally.people)
    per_person = tokens / people if people else None
    print(
        f"requests {tally.requests}, errors {tally.errors}; new sessions (distinct allow tokens) {tokens}, "
        f"people admitted {people}, tokens per person {'-' if per_person is None else f'{per_person:.3f}'}"
    )
    if verdict:
        low, high = verdict["band"]
        if verdict["minutes"]:
            print(
                f"target {args.target:g}/min: a minute's Poisson noise sqrt({args.target:g}) = {verdict['sigma']:.1f}, "
                f"3-sigma band {low:.1f}-{high:.1f}; minutes 3-{len(rows)}: mean {verdict['mean']:.1f} "
                f"({verdict['mean_ratio']:.3f}x, noise of the mean {verdict['sigma_of_mean_ratio'] * 100:.1f} %, "
                f"criterion +-10 %), outside the band: {verdict['minutes_outside_band'] or 'none'}: "
                f"{'met' if verdict['met'] else 'MISSED'}"
            )
        else:
            print(f"target {args.target:g}/min: no minute after the second to judge")
    skippers = args.first_person + round(args.people * args.toll_skippers)
    if args.toll_skippers > 0 or tally.payments:
        admitted_skippers = sum(1 for p in tally.people if p < skippers)
        print(
            f"bot toll: {tally.payments} payments, {tally.hashes} hashes; people admitted: "
            f"{len(tally.people) - admitted_skippers} of {args.people - (skippers - args.first_person)} who pay, "
            f"{admitted_skippers} of {skippers - args.first_person} who skip"
        )
    if args.json:
        with open(args.json, "w") as out:
            totals = {
                "requests": tally.requests,
                "errors": tally.errors,
                "toll_payments": tally.payments,
                "new_sessions": tokens,
                "people_admitted": people,
                "tokens_per_person": per_person,
                "judgement": verdict,
            }
            json.dump({"minutes": rows, **totals}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

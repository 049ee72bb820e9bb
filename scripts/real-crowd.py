#!/usr/bin/env python3
"""A browser-like crowd against a running room, over real HTTP, from many
loopback addresses: each person has their own 127.0.x.y address and a few tabs
that share one cookie jar; each tab follows the waiting page's `Refresh`, and
once admitted browses a few pages and closes. Bounded in time: every tab stops
at --duration. Prints, per minute, the new sessions (distinct allow tokens, as
the origin and the controller count them: the address and the token's `exp`)
and the people admitted; with --json, writes them too. With --app-poll MIN:MAX the
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
            rows.append(
                {
                    "minute": m,
                    "new_sessions": sum(1 for t in self.tokens.values() if self.minute(t) == m),
                    "people_admitted": sum(1 for t in self.people.values() if self.minute(t) == m),
                }
            )
        return rows


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
            time.sleep(wait if wait is not None else args.poll)


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
    parser.add_argument("--arrive-over", type=float, default=10.0, help="seconds over which people arrive")
    parser.add_argument("--tab-spread", type=float, default=3.0, help="seconds over which a person's tabs open")
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
        jar, lock = {}, threading.Lock()
        skips = person < args.first_person + round(args.people * args.toll_skippers)
        arrives = start + rng.uniform(0, args.arrive_over)
        for _ in range(args.tabs):
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
    print("minute  new sessions (tokens)  people admitted")
    for row in rows:
        print(f"{row['minute']:>6}  {row['new_sessions']:>21}  {row['people_admitted']:>15}")
    print(f"requests {tally.requests}, errors {tally.errors}, tokens {len(tally.tokens)}, people {len(tally.people)}")
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
            totals = {"requests": tally.requests, "errors": tally.errors, "toll_payments": tally.payments}
            json.dump({"minutes": rows, **totals}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

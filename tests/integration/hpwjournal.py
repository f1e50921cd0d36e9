"""Read and rewrite hpwarmd's journal from tests, independently of the C
reader: state.json (the snapshot) with state.log (checksummed records since
it) replayed, by the rules in server/src/journal/journal_log.c.

read(state_dir) -> the snapshot document with every logged change applied,
plus "_log": {"records", "torn", "stale"}.  Damage raises ValueError.
write(state_dir, doc) -> a snapshot alone (the log removed), for tests that
edit the state the way an older daemon or an operator would.
"""
import json
import os

_POLY = 0x82F63B78
_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ _POLY if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _line_text(line):
    if len(line) < 11 or line[8:9] != b" ":
        return None
    try:
        crc = int(line[:8].decode("ascii"), 16)
    except ValueError:
        return None
    text = line[9:]
    return text if crc32c(text) == crc else None


def read(state_dir):
    with open(os.path.join(state_dir, "state.json"), "rb") as f:
        doc = json.loads(f.read())
    info = {"records": 0, "torn": False, "stale": False}
    doc["_log"] = info
    try:
        with open(os.path.join(state_dir, "state.log"), "rb") as f:
            log = f.read()
    except FileNotFoundError:
        return doc
    lines = log.split(b"\n")
    tail = lines.pop()          # after the last newline: b"" unless torn
    if tail:
        info["torn"] = True
    rows = {p["name"]: p for p in doc["pools"]}
    for i, line in enumerate(lines):
        text = _line_text(line)
        if text is None:
            if i == len(lines) - 1 and not tail:
                info["torn"] = True
                break
            raise ValueError("state.log line %d: bad checksum" % (i + 1))
        rec = json.loads(text)
        if i == 0:
            if rec.get("version", 0) > 2:
                raise ValueError("state.log: a newer version")
            if rec.get("snapshot") != doc.get("snapshot"):
                info["stale"] = True
                break
            continue
        for d in rec["drop"]:
            if d["name"] not in rows:
                raise ValueError("state.log line %d drops %s, not there" % (i + 1, d["name"]))
            del rows[d["name"]]
        for p in rec["put"]:
            rows[p["name"]] = p
        for k in ("reservations", "stock_targets", "elastic_policies"):
            if k in rec:
                doc[k] = rec[k]
        info["records"] += 1
    doc["pools"] = list(rows.values())
    return doc


def write(state_dir, doc):
    doc = {k: v for k, v in doc.items() if k != "_log"}
    try:
        os.unlink(os.path.join(state_dir, "state.log"))
    except FileNotFoundError:
        pass
    with open(os.path.join(state_dir, "state.json"), "w") as f:
        json.dump(doc, f)

"""The catalogue benchmark's requests, as the app makes them (standard library only).

    workload.py areas HUBS SEED OUT_TSV      hub id and GeoJSON polygon per line, around Berlin
    workload.py points COUNT SEED OUT        /v1/delivery-area?lat=..&lng=.. paths
    workload.py screens BASE HUB OUT         the home and every category's first three pages,
                                             following each page's nextCursor from BASE
    workload.py queries BASE HUB COUNT SEED OUT
                                             /v1/hubs/HUB/search?q=.. paths: prefixes of words of
                                             the hub's product names (one or two words)
    workload.py capture BASE PATHS DIR OUT   GETs every path once, writes each body to DIR/<i>.json
                                             and OUT the nginx path (/r/<i>.json) of each line
"""

import json
import math
import random
import sys
import urllib.parse
import urllib.request


def get(url):
    with urllib.request.urlopen(url, timeout=10) as reply:
        return reply.status, reply.read()


def areas(hubs, seed, out):
    rng = random.Random(seed)
    with open(out, "w") as f:
        for i in range(1, hubs + 1):
            lat, lng = 52.3 + rng.random() * 0.4, 13.1 + rng.random() * 0.6
            radius = 0.02 + rng.random() * 0.04
            ring = []
            for k in range(16):  # an irregular 16-gon, never crossing itself
                angle = 2 * math.pi * k / 16
                r = radius * (0.7 + 0.3 * rng.random())
                ring.append([round(lng + 1.6 * r * math.cos(angle), 6), round(lat + r * math.sin(angle), 6)])
            ring.append(ring[0])
            area = {"area": {"type": "Polygon", "coordinates": [ring]}, "priority": rng.randint(0, 3)}
            f.write("b%03d\t%s\n" % (i, json.dumps(area, separators=(",", ":"))))


def points(count, seed, out):
    rng = random.Random(seed)
    with open(out, "w") as f:
        for _ in range(count):
            f.write("/v1/delivery-area?lat=%.5f&lng=%.5f\n" % (52.28 + rng.random() * 0.44, 13.05 + rng.random() * 0.7))


def screens(base, hub, out):
    paths = ["/v1/hubs/%s/home?sections=banners,categories,products,buyAgain" % hub] * 20
    _, body = get("%s/v1/hubs/%s/categories" % (base, hub))
    ids = []
    for root in json.loads(body)["categories"]:
        ids.append(root["id"])
        ids.extend(child["id"] for child in root["children"])
    for category in ids:
        path = "/v1/hubs/%s/categories/%s/products?limit=20" % (hub, category)
        for _ in range(3):
            paths.append(path)
            _, body = get(base + path)
            cursor = json.loads(body)["nextCursor"]
            if cursor is None:
                break
            path = "/v1/hubs/%s/categories/%s/products?limit=20&cursor=%s" % (hub, category, cursor)
    with open(out, "w") as f:
        f.write("\n".join(paths) + "\n")


def queries(base, hub, count, seed, out):
    rng = random.Random(seed)
    words = set()
    path = "/v1/hubs/%s/products?limit=100" % hub
    while path:
        _, body = get(base + path)
        page = json.loads(body)
        for item in page["items"]:
            words.update(w for w in item["name"].split() if len(w) >= 4 and w.isalpha())
        path = page["next"] and "/v1/hubs/%s/products?limit=100&after=%s" % (hub, page["next"])
    words = sorted(words)
    with open(out, "w") as f:
        for _ in range(count):
            picked = [rng.choice(words) for _ in range(1 if rng.random() < 0.7 else 2)]
            q = " ".join(w[: rng.randint(3, len(w))].lower() for w in picked)
            f.write("/v1/hubs/%s/search?q=%s&limit=20\n" % (hub, urllib.parse.quote(q)))


def capture(base, paths_file, directory, out):
    with open(paths_file) as f:
        paths = [line.strip() for line in f if line.strip()]
    seen = {}
    lines = []
    for path in paths:
        if path not in seen:
            status, body = get(base + path)
            if status != 200:
                sys.exit("capture: %s answered %d" % (path, status))
            seen[path] = len(seen)
            with open("%s/%d.json" % (directory, seen[path]), "wb") as f:
                f.write(body)
        lines.append("/r/%d.json" % seen[path])
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


def main(argv):
    command, args = argv[1], argv[2:]
    if command == "areas":
        areas(int(args[0]), int(args[1]), args[2])
    elif command == "points":
        points(int(args[0]), int(args[1]), args[2])
    elif command == "screens":
        screens(args[0], args[1], args[2])
    elif command == "queries":
        queries(args[0], args[1], int(args[2]), int(args[3]), args[4])
    elif command == "capture":
        capture(args[0], args[1], args[2], args[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)

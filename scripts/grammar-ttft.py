#!/usr/bin/env python3
"""Time to first token with and without a json_schema constraint, against a running
`glass serve` (start it with --no-prefix-cache so both kinds compute their whole prompt).

  scripts/grammar-ttft.py PORT SCHEMA.json [REQUESTS]

Alternates plain and constrained streamed chat requests; each constrained request adds a
property to the schema, so the server compiles a schema it has not seen. Prints both
medians and their difference (docs/performance.md, "Constrained decoding")."""
import http.client
import json
import statistics
import sys
import time


def first_token_seconds(port, body):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    start = time.perf_counter()
    conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    response = conn.getresponse()
    if response.status != 200:
        sys.exit(f"grammar-ttft: HTTP {response.status}: {response.read()[:500]!r}")
    try:
        for line in response:
            if not line.startswith(b"data: {"):
                continue
            choices = json.loads(line[6:])["choices"]
            if choices and (choices[0]["delta"].get("content") or choices[0]["delta"].get("tool_calls")):
                return time.perf_counter() - start
    finally:
        conn.close()
    return time.perf_counter() - start


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    port, schema = int(sys.argv[1]), json.load(open(sys.argv[2]))
    requests = int(sys.argv[3]) if len(sys.argv) > 3 else 7
    plain, constrained = [], []
    for i in range(requests):
        messages = [{"role": "user", "content": f"Describe person number {i} as JSON."}]
        plain.append(first_token_seconds(port, {"messages": messages, "stream": True, "max_tokens": 2, "seed": i}))
        fresh = dict(schema, properties=dict(schema.get("properties", {}), **{f"extra{i}": {"type": "boolean"}}))
        constrained.append(first_token_seconds(port, {
            "messages": messages, "stream": True, "max_tokens": 2, "seed": i,
            "response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": fresh}}}))
    ms = lambda xs: [round(x * 1000, 1) for x in xs]
    print("plain       ms:", ms(plain), "median", round(statistics.median(plain) * 1000, 1))
    print("json_schema ms:", ms(constrained), "median", round(statistics.median(constrained) * 1000, 1))
    print("difference of the medians ms:", round((statistics.median(constrained) - statistics.median(plain)) * 1000, 1))


if __name__ == "__main__":
    main()

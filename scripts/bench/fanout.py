#!/usr/bin/env python3
"""Prints an OpenAPI document whose schemas fan out: L4 refers ten times to L3, which refers
ten times to L2 ... L0, so L4 inlined is 10^4 leaves; OPERATIONS operations (default 300) take
L4 as request body and as response. An input for scripts/bench/import.sh:

    scripts/bench/fanout.py > /tmp/fanout.json && scripts/bench/import.sh /tmp/fanout.json
"""
import json
import sys

operations = int(sys.argv[1]) if len(sys.argv) > 1 else 300
schemas = {"L0": {"type": "string"}}
for level in range(1, 5):
    schemas[f"L{level}"] = {
        "type": "object",
        "properties": {f"p{i}": {"$ref": f"#/components/schemas/L{level - 1}"} for i in range(10)},
    }
body = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/L4"}}}}
paths = {
    f"/op{n}": {"post": {"operationId": f"op{n}", "requestBody": body,
                         "responses": {"200": {"description": "ok", **body}}}}
    for n in range(operations)
}
json.dump({"openapi": "3.0.3", "info": {"title": "fan-out", "version": "1"}, "paths": paths,
           "components": {"schemas": schemas}}, sys.stdout)

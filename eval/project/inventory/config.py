import json


def parse_config(path):
    with open(path) as f:
        raw = json.load(f)
    config = {}
    for key, value in raw.items():
        config[key.lower()] = value
    return config


def load_defaults():
    return {"name": "inventory", "debug": False}

import json


def parse_config(path):
    with open(path) as f:
        raw = json.load(f)
    config = {}
    for key, value in raw.items():
        config[key.lower()] = value
    return config


def greet(name):
    return "Hello, " + name + "!"


def main():
    config = parse_config("config.json")
    print(greet(config.get("name", "world")))


if __name__ == "__main__":
    main()

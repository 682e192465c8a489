"""What the contract's comments promise about numbers and conventions is what the server does:
the heartbeat interval, the default clock-less settings, and how OptionInfo writes values."""

from __future__ import annotations

import re
from pathlib import Path

from google.protobuf.descriptor import EnumDescriptor

from rami.engine import OPTION_SPECS, Options
from rami.server import convert
from rami.server.table import TableConfig
from rami.v1 import game_pb2

PROTO = Path(__file__).resolve().parents[2] / "proto" / "rami" / "v1"


def test_the_heartbeat_interval_the_contract_states_is_the_servers() -> None:
    text = (PROTO / "table_service.proto").read_text()
    found = re.search(r"never silent for more than (\d+) seconds", text)
    assert found, "table_service.proto states the heartbeat interval"
    assert float(found.group(1)) == TableConfig().heartbeat
    # A heartbeat comes after half the interval of silence at the least (the streams are
    # swept every half interval, and beat at the second sweep that finds them silent).
    found = re.search(r"for between ([\d.]+) and (\d+) seconds", text)
    assert found, "table_service.proto states when a heartbeat comes"
    assert [float(x) for x in found.groups()] == [
        TableConfig().heartbeat / 2,
        TableConfig().heartbeat,
    ]


def _enum_for(option: str) -> EnumDescriptor | None:
    field = game_pb2.Options.DESCRIPTOR.fields_by_name[option]
    return field.enum_type


def test_option_info_writes_every_value_the_one_way_the_contract_says() -> None:
    """Integers in decimal, on/off as "false"/"true", an enum option's value as its name
    without the enum's prefix, in lowercase (game.proto's conventions)."""
    conventions = (PROTO / "game.proto").read_text()
    assert 'always means "not set"' in conventions, "game.proto states what 0 means"
    assert "an enum option as its value's name without the enum" in conventions
    infos = {o.name: o for v in convert.variants_to_proto() for o in v.options}
    defaults = Options()
    for spec in OPTION_SPECS:
        info = infos[spec.name]
        enum = _enum_for(spec.name)
        default = getattr(defaults, spec.name)
        if enum is not None:
            prefix = re.sub(r"(?<!^)(?=[A-Z])", "_", enum.name).upper() + "_"
            names = {v.name.removeprefix(prefix).lower() for v in enum.values if v.number}
            assert set(info.choices) <= names and info.default_value in names, spec.name
        elif isinstance(default, bool):
            assert info.default_value in ("false", "true")
            assert set(info.choices) <= {"false", "true"}
        else:
            assert info.default_value == str(default)
            assert all(re.fullmatch(r"-?\d+", c) for c in info.choices), spec.name


def test_the_servers_help_shows_every_word_of_its_texts_at_80_columns() -> None:
    # In Rich's boxed help, [postgres] was read as markup and vanished, and a long URL was cut.
    from typer.testing import CliRunner

    from rami.server.cli import app

    out = " ".join(CliRunner().invoke(app, ["--help"], terminal_width=80).output.split())
    for words in ("pip install -e '.[postgres]'", "postgresql://host/db"):
        assert words in out, out

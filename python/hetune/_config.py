"""Config texts ("TX=16,TY=8", as ht_config_text writes them) to and from dicts."""
import ctypes

from . import _lib
from ._lib import lib


def _split(text, sep):
    """Splits at each sep not escaped with '\\', keeping the escapes."""
    parts, start, i = [], 0, 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == sep:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return parts


def _unescape(s):
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            i += 1
        out.append(s[i])
        i += 1
    return "".join(out)


def _escape(s):
    return "".join("\\" + c if c in ",=\\" else c for c in str(s))


def format_value(v):
    """A parameter value as hetune writes it (16, 0.5, 1e-06, strings verbatim)."""
    keep = []
    buf = ctypes.create_string_buffer(64)
    n = lib.ht_value_format(_lib.value_from_py(v, keep), buf, len(buf))
    if n >= len(buf):
        buf = ctypes.create_string_buffer(n + 1)
        lib.ht_value_format(_lib.value_from_py(v, keep), buf, len(buf))
    return buf.value.decode()


def _guess(text):
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def parse_config(text, params=None):
    """{name: value}; params ({name: [values]}) gives each value its type, else it is guessed."""
    out = {}
    for item in _split(text or "", ",") if text else []:
        name, val = (_split(item, "=") + [""])[:2] if "=" in item else (item, "")
        name, val = _unescape(name), _unescape(val)
        known = {format_value(v): v for v in (params or {}).get(name, [])}
        out[name] = known.get(val, _guess(val))
    return out


def format_config(config):
    """{name: value} as "A=1,B=x" (names in the dict's order)."""
    if isinstance(config, str):
        return config
    return ",".join("%s=%s" % (_escape(k), _escape(format_value(v))) for k, v in config.items())

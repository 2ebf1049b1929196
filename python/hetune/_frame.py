"""Lists of plain dicts that also turn into a pandas DataFrame when pandas is installed."""


def _pandas():
    try:
        import pandas
    except ImportError:
        raise ImportError("to_dataframe() needs pandas, which is not installed for this Python "
                          "(pip install pandas); the results are also plain dicts in this list") from None
    return pandas


class Records(list):
    """A list of plain dicts; to_dataframe() gives one row per dict."""

    def to_dataframe(self):
        return _pandas().DataFrame(list(self))


class Evaluations(Records):
    """Evaluations as plain dicts: config (a dict of parameter values), status, time_s, ...
    to_dataframe() puts each parameter in a column of its own, before the measurements."""

    def to_dataframe(self):
        pd = _pandas()
        params = []
        for e in self:
            params += [k for k in e.get("config", {}) if k not in params]
        rows = []
        for e in self:
            row = {k: e.get("config", {}).get(k) for k in params}
            row.update({k: v for k, v in e.items() if k != "config" and k not in params})
            rows.append(row)
        return pd.DataFrame(rows, columns=params + [k for k in (rows[0] if rows else {}) if k not in params])

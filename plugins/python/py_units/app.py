"""py_units: convert between units of length, mass, time, volume, speed, data and temperature.

Built with `plugins/python/build.sh`; the tools are plain functions, the
toolhost SDK derives their JSON Schemas from the type hints and docstrings.
"""

from typing import Dict, Literal, Optional

from toolhost_sdk import InvalidInput, Tool, config, tool  # noqa: F401  (Tool is the component export)

Category = Literal["length", "mass", "time", "volume", "speed", "data", "temperature"]

# Factor to the category's base unit (metre, kilogram, second, litre, m/s, byte).
_FACTORS: Dict[str, Dict[str, float]] = {
    "length": {
        "nm": 1e-9, "um": 1e-6, "mm": 1e-3, "cm": 1e-2, "m": 1.0, "km": 1e3,
        "in": 0.0254, "ft": 0.3048, "yd": 0.9144, "mi": 1609.344, "nmi": 1852.0,
    },
    "mass": {
        "mg": 1e-6, "g": 1e-3, "kg": 1.0, "t": 1e3,
        "oz": 0.028349523125, "lb": 0.45359237, "st": 6.35029318,
    },
    "time": {
        "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0,
        "day": 86400.0, "week": 604800.0,
    },
    "volume": {
        "ml": 1e-3, "cl": 1e-2, "l": 1.0, "m3": 1e3,
        "tsp": 0.00492892159375, "tbsp": 0.01478676478125, "cup": 0.2365882365,
        "pt": 0.473176473, "qt": 0.946352946, "gal": 3.785411784,
    },
    "speed": {"m/s": 1.0, "km/h": 1 / 3.6, "mph": 0.44704, "kn": 1852.0 / 3600.0, "ft/s": 0.3048},
    "data": {
        "bit": 0.125, "B": 1.0, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
        "KiB": 1024.0, "MiB": 1024.0**2, "GiB": 1024.0**3, "TiB": 1024.0**4,
    },
}
_TEMPERATURES = ("C", "F", "K")


def _category(unit: str) -> str:
    if unit in _TEMPERATURES:
        return "temperature"
    for category, units in _FACTORS.items():
        if unit in units:
            return category
    raise InvalidInput(f"unknown unit {unit!r}; call py_list_units to see the units this tool knows")


def _to_kelvin(value: float, unit: str) -> float:
    return {"C": value + 273.15, "F": (value - 32) * 5 / 9 + 273.15, "K": value}[unit]


def _from_kelvin(value: float, unit: str) -> float:
    return {"C": value - 273.15, "F": (value - 273.15) * 9 / 5 + 32, "K": value}[unit]


@tool
def py_convert_units(value: float, from_unit: str, to_unit: str, precision: Optional[int] = None) -> dict:
    """Convert a quantity from one unit to another of the same kind (length, mass, time, volume, speed, data, temperature).

    Args:
        value: The quantity to convert.
        from_unit: Unit of `value`, e.g. "km", "lb", "F", "MiB", "km/h".
        to_unit: Unit to convert to; must measure the same kind of thing.
        precision: Round the result to this many decimal places (0-15). Defaults to the manifest's `precision` config, else no rounding.
    """
    source, target = _category(from_unit), _category(to_unit)
    if source != target:
        raise InvalidInput(f"cannot convert {source} ({from_unit}) to {target} ({to_unit})")
    if source == "temperature":
        kelvin = _to_kelvin(value, from_unit)
        if kelvin < 0:
            raise InvalidInput(f"{value} {from_unit} is below absolute zero")
        result = _from_kelvin(kelvin, to_unit)
    else:
        result = value * _FACTORS[source][from_unit] / _FACTORS[source][to_unit]
    if precision is None:
        configured = config("precision")
        precision = int(configured) if configured is not None and configured.isdigit() else None
    if precision is not None:
        if not 0 <= precision <= 15:
            raise InvalidInput("precision must be between 0 and 15")
        result = round(result, precision)
    return {"value": result, "unit": to_unit, "category": source}


@tool
def py_list_units(category: Optional[Category] = None) -> dict:
    """List the units py_convert_units knows, grouped by what they measure.

    Args:
        category: Only list this kind of unit.
    """
    groups = {name: sorted(units, key=units.get) for name, units in _FACTORS.items()}
    groups["temperature"] = list(_TEMPERATURES)
    if category is not None:
        return {category: groups[category]}
    return groups

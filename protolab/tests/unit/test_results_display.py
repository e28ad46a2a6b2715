"""protolab.results.display: human units for tables, checks and plots."""

import pytest

from protolab.results.display import Display, axis_str, is_measured, parse_axis_value, quantity_name, unit_family


def test_rate_in_mbit():
    d = Display.for_column("h3_rx_bits_per_second", [9.6e6])
    assert d.header("h3_rx_bits_per_second") == "h3 rx (Mbit/s)"
    assert d.mean_sd(9.6e6, 28284.27, 2) == "9.600 ± 0.028"
    assert d.mean_sd(96.54e6, 0.0, 1) == "96.54"
    assert d.with_unit(9.571e6) == "9.571 Mbit/s"
    assert d.bound(9.5e6, 10.5e6) == "9.50 – 10.50 Mbit/s"
    assert d.mean_sd(None, None, 0) == "—"


def test_ratio_as_percent_and_seconds_as_ms():
    assert Display.for_column("f1_loss_ratio").with_unit(0.0123) == "1.23 %"
    assert Display.for_column("f1_loss_ratio").bound(None, 0.01) == "≤ 1.00 %"
    ms = Display.for_column("rtt_seconds", [0.0021, 0.2])
    assert (ms.unit, ms.with_unit(0.0125)) == ("ms", "12.50 ms")
    assert Display.for_column("rtt_seconds", [0.5, 2.0]).with_unit(2.0) == "2.000 s"


def test_packets_counts_and_unknown():
    assert Display.for_column("h3_rx_packets_per_second").mean_sd(8551.2, 32.1, 3) == "8,551 ± 32"
    total = Display.for_column("f1_retransmits_total")
    assert total.header("f1_retransmits_total") == "f1 retransmits (count)"
    assert total.number(12.0) == "12" and total.mean_sd(43.0, 4.24, 2) == "43.0 ± 4.2"
    other = Display.for_column("weird")
    assert (other.header("weird"), other.number(1234567.0)) == ("weird", "1.235e+06")


def test_names_and_axis_values():
    assert quantity_name("h1_cpu_ratio") == "h1 cpu"
    assert is_measured("x_bits_per_second") and is_measured("x_total") and not is_measured("topology")
    assert axis_str({"b": 1, "a": 2}) == '{"a": 2, "b": 1}' and axis_str(10) == "10"
    assert parse_axis_value("10Mbit") == (1e7, "rate")
    assert parse_axis_value("100ms") == (pytest.approx(0.1), "seconds")
    assert parse_axis_value("1500B") == (1500.0, "bytes")
    assert parse_axis_value("3") == (3.0, None)
    assert parse_axis_value("hub") is None and parse_axis_value({"a": 1}) is None


def test_byte_rates_in_kilobytes_per_second():
    d = Display.for_column("t2_throughput_mean_bytes_per_second", [1.15e6])
    assert d.header("t2_throughput_mean_bytes_per_second") == "t2 throughput mean (kB/s)"
    assert d.number(1.15e6) == "1,150.0" and d.number(250880) == "250.88"
    assert unit_family("t2_throughput_mean_bytes_per_second") == "byterate"  # not bytes, not a bit rate

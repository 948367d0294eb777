/*
 * railgauge: every C unit test, declared once and listed once.
 *
 * Included only by runner.c. tests/CMakeLists.txt reads the TEST_ENTRY lines
 * to register each test with ctest, so a test added here is run by ctest
 * without touching the build files. Names are <topic>_<what>; the topic
 * becomes the ctest group (stats_median -> base.stats.median).
 */

TEST_DECLARE(status_names)
TEST_DECLARE(status_err_set)
TEST_DECLARE(status_err_errno)

TEST_DECLARE(timer_monotonic)
TEST_DECLARE(timer_calibration)
TEST_DECLARE(timer_spin)
TEST_DECLARE(timer_fallback)
TEST_DECLARE(timer_resolution)
TEST_DECLARE(timer_convert)
TEST_DECLARE(timer_invalid)

TEST_DECLARE(stats_basic)
TEST_DECLARE(stats_median)
TEST_DECLARE(stats_quantile)
TEST_DECLARE(stats_ci_small)
TEST_DECLARE(stats_ci_exact)
TEST_DECLARE(stats_ci_normal)
TEST_DECLARE(stats_ci_random)
TEST_DECLARE(stats_invalid)
TEST_DECLARE(stats_rel_halfwidth)

TEST_DECLARE(json_nested)
TEST_DECLARE(json_escape)
TEST_DECLARE(json_numbers)
TEST_DECLARE(json_double_roundtrip)
TEST_DECLARE(json_overflow)
TEST_DECLARE(json_depth)
TEST_DECLARE(json_misuse)
TEST_DECLARE(json_write_line)

TEST_DECLARE(config_parse_size)
TEST_DECLARE(config_parse_time)
TEST_DECLARE(config_parse_types)
TEST_DECLARE(config_load_defaults)
TEST_DECLARE(config_env_override)
TEST_DECLARE(config_env_bad)
TEST_DECLARE(config_bad_table)
TEST_DECLARE(config_print)

TASK_LIST_START
  TEST_ENTRY(status_names)
  TEST_ENTRY(status_err_set)
  TEST_ENTRY(status_err_errno)

  TEST_ENTRY(timer_monotonic)
  TEST_ENTRY(timer_calibration)
  TEST_ENTRY(timer_spin)
  TEST_ENTRY(timer_fallback)
  TEST_ENTRY(timer_resolution)
  TEST_ENTRY(timer_convert)
  TEST_ENTRY(timer_invalid)

  TEST_ENTRY(stats_basic)
  TEST_ENTRY(stats_median)
  TEST_ENTRY(stats_quantile)
  TEST_ENTRY(stats_ci_small)
  TEST_ENTRY(stats_ci_exact)
  TEST_ENTRY(stats_ci_normal)
  TEST_ENTRY(stats_ci_random)
  TEST_ENTRY(stats_invalid)
  TEST_ENTRY(stats_rel_halfwidth)

  TEST_ENTRY(json_nested)
  TEST_ENTRY(json_escape)
  TEST_ENTRY(json_numbers)
  TEST_ENTRY(json_double_roundtrip)
  TEST_ENTRY(json_overflow)
  TEST_ENTRY(json_depth)
  TEST_ENTRY(json_misuse)
  TEST_ENTRY(json_write_line)

  TEST_ENTRY(config_parse_size)
  TEST_ENTRY(config_parse_time)
  TEST_ENTRY(config_parse_types)
  TEST_ENTRY(config_load_defaults)
  TEST_ENTRY(config_env_override)
  TEST_ENTRY(config_env_bad)
  TEST_ENTRY(config_bad_table)
  TEST_ENTRY(config_print)
TASK_LIST_END

/* sql.c — `dlhook sql DIR QUERY` and `dlhook analyze DIR`: SQL over the Parquet dataset of
 * `dlhook export --format parquet`, on DuckDB (embedded, the default) or Spark. Both run in the
 * Python package (command/python/dlhook/query.py); the analyses are SQL files of their own
 * (command/python/dlhook/sql/NAME.sql), one per analysis, the same text on both engines. The
 * options are checked here, from the table that --help and the manual page show. */
#include <stdlib.h>

#include "rd.h"
#include "rd_opts.h"

static const rd_choice engines[] = {
    {"duckdb", "DuckDB, embedded (the default)", 0},
    {"spark", "Apache Spark through pyspark (--master, default local[*])", 0},
    {NULL, NULL, 0}};
static const rd_choice sql_formats[] = {
    {"table", "aligned text columns (the default)", 0},
    {"csv", "comma-separated values with a header line", 0},
    {"json", "one JSON object per row", 0},
    {NULL, NULL, 0}};

enum { OPT_ENGINE = RD_KEY(0), OPT_MASTER, OPT_FORMAT, OPT_JSON, OPT_ONLY };
static const rd_option sql_options[] = {
    {"engine", OPT_ENGINE, "ENGINE", "the SQL engine:", engines, 0},
    {"master", OPT_MASTER, "URL", "spark: the cluster's master URL (default local[*])", NULL, 0},
    {"format", OPT_FORMAT, "FORMAT", "how rows are printed:", sql_formats, 0},
    {NULL, 0, NULL, NULL, NULL, 0}};
static const rd_option analyze_options[] = {
    {"engine", OPT_ENGINE, "ENGINE", "the SQL engine:", engines, 0},
    {"master", OPT_MASTER, "URL", "spark: the cluster's master URL (default local[*])", NULL, 0},
    {"json", OPT_JSON, NULL, "one JSON object: each analysis's rows", NULL, 0},
    {"only", OPT_ONLY, "NAME[,NAME...]", "only these analyses: steps, ranks, straggler, collective_skew, kernels, "
     "operators, overlap, memory_peaks", NULL,
     RD_OPT_LIST},
    {NULL, 0, NULL, NULL, NULL, 0}};

const rd_command cmd_sql_spec = {
    .name = "sql",
    .synopsis = "[--engine duckdb|spark] [--format FORMAT] DIR QUERY",
    .summary = "run SQL over a Parquet dataset of traces (DuckDB or Spark)",
    .about = "Runs QUERY over the Parquet dataset DIR that `dlhook export --format parquet` "
             "wrote. Each table (calls, gpu, nvtx, memory, stacks, samples, operators, threads, "
             "processes, anchors) is a view of its name, with the partition columns job, host "
             "and rank. DuckDB runs embedded; --engine spark runs the same SQL on Spark "
             "(pyspark and a Java runtime needed). QUERY may also be @FILE, a file of SQL.",
    .examples = " dlhook sql tables \"SELECT rank, count(*) FROM calls GROUP BY rank\"\n"
                " dlhook sql --engine spark tables @query.sql",
    .options = sql_options,
};

const rd_command cmd_analyze_spec = {
    .name = "analyze",
    .synopsis = "[--engine duckdb|spark] [--master URL] [--json] DIR",
    .summary = "steps, straggler, skew, kernels, operators, overlap, memory from a Parquet dataset",
    .about = "Runs the analyses over the Parquet dataset DIR of `dlhook export --format "
             "parquet`: steps per rank, the straggler and collective skew, kernel and operator "
             "summaries, communication/compute overlap and memory peaks. Each analysis is one "
             "SQL file (command/python/dlhook/sql/), run unchanged by DuckDB (the default) or "
             "Spark (--engine spark --master URL), whose results are the same.",
    .examples = " dlhook analyze tables\n"
                " dlhook analyze --engine spark --master 'local[*]' --json tables",
    .options = analyze_options,
};

static int run(const rd_command *spec, int argc, char **argv, size_t operands) {
  rd_getopt g;
  int k;
  size_t n = 0;
  rd_getopt_init(&g, spec, argc, argv);
  while ((k = rd_getopt_next(&g)) > 0)
    if (k == RD_OPERAND) n++;
  if (k < 0) return g.status;
  if (n != operands)
    return rd_usage_error(spec->name, operands == 2 ? "DIR and QUERY are needed" : "one DIR is needed");
  return rd_python(spec->name, argc - 1, argv + 1);
}

int cmd_sql(int argc, char **argv) { return run(&cmd_sql_spec, argc, argv, 2); }
int cmd_analyze(int argc, char **argv) { return run(&cmd_analyze_spec, argc, argv, 1); }

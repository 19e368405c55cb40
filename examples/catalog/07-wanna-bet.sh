#!/bin/sh
# Catalog entry 7: "Wanna bet?", the central limit theorem demonstrated.
#
# Question: can you bet that 9 of the next 10 group means fall within mean +/- 2 sd of the
# first few, and are the means of child sets of a skewed (exponential) population normal, with
# about 95% of them within +/- 2 sd?
#
# Seed: article 002, "Wanna Bet? Cool facts about the central limit theorem" (Craig
# Shallahamer, OraPub, 28 February 2012). The article gives the five group mean ages of its bet,
# the ten hidden ones and the 30 child-set means of its 900-value exponential set, but not the
# 900 values: data/07-generate-exponential.py draws a set with the article's parameters (mean
# 5.0, 30 sets of 30 cut in order from the sixth value) from a fixed seed, and
# data/07-exponential-900.csv is its output.
#
# No database: the figures go through `wannabet import csv`, and `wannabet compare` prints each
# condition's central-limit block (mean, sd, the +/- 2 sd range and how many of the observed
# means lie in it, the 90% prediction interval of the next mean and the bet sentence).
#
# Run (full form, about 1.5 minutes on a loaded machine here, 26 s of it CPU; a fresh results file, since an import is refused for a
# file already imported into it):
#
#     sh examples/catalog/07-wanna-bet.sh [RESULTS]    # default wanna-bet.duckdb here
#
# It makes three runs: the DBAs' ages (first-5 and next-10), the child means (the article's
# 30 against the generated 900's 30) and the article's scale-up (8100 values, 90 sets of 90,
# generated into a temporary file), prints `compare` for each and writes wanna-bet-clt.html
# next to the results, whose "Sample means and the bet" chart draws the child means against
# their normal curve. The CI short form is tests/test_catalog_07.py (the same imports, seconds).
# WANNABET and PYTHON name the commands to use (default `wannabet` and `python3`).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
data="$here/data"
results=${1:-wanna-bet.duckdb}
wannabet=${WANNABET:-wannabet}
python=${PYTHON:-python3}

if [ -e "$results" ]; then
    echo "error: $results exists; name a new results file (an import is refused twice)" >&2
    exit 2
fi

# The run id an import printed ("imported 30 rows of FILE as run 2: ...").
run_of() { sed -n 's/.* as run \([0-9][0-9]*\):.*/\1/p'; }

# 1. The bet: five group means, then the ten the article turned over one by one.
ages=$($wannabet import csv "$data/07-dba-ages.csv" --condition condition --value mean_age --sample group --name wanna-bet-ages --results "$results" | run_of)

# 2. The child means: the article's own 30, and the 30 of the generated 900 (a child set is
#    one sample, so its mean is one sample mean; --level transaction sees the 900 values).
clt=$($wannabet import csv "$data/07-article-child-means.csv" --condition condition --value mean --sample child_set --name wanna-bet-clt --results "$results" | run_of)
$wannabet import csv "$data/07-exponential-900.csv" --condition condition --value value --sample child_set --run "$clt" --results "$results"

# 3. The article's scale-up: 8100 values in 90 child sets of 90.
big=$(mktemp "${TMPDIR:-/tmp}/exponential-8100.XXXXXX")
trap 'rm -f "$big"' EXIT
"$python" "$data/07-generate-exponential.py" --values 8100 --sets 90 > "$big"
scale=$($wannabet import csv "$big" --condition condition --value value --sample child_set --name wanna-bet-8100 --results "$results" | run_of)

$wannabet compare --results "$results" --run "$ages"
$wannabet compare --results "$results" --run "$clt"
$wannabet compare --results "$results" --run "$clt" --level transaction
$wannabet compare --results "$results" --run "$scale"
$wannabet report --results "$results" --run "$clt" -o "$(dirname "$results")/wanna-bet-clt.html"

#!/usr/bin/env bash
# The Twitter stream slice IPA (Ghafouri et al.) replays, as a CSV of rates pipescale reads:
# seconds 1,301,160 to 1,302,360 (the end excluded) of web-service-datasets'
# dataset/twitter_trace/workload.txt (requests per second, space separated), each divided by 8
# and rounded down, as IPA's configurations do.
# Not redistributed here: that repository states no licence.
#   bench/traces/twitter-ipa-slice.sh workload.txt > /tmp/twitter-ipa-slice.csv
set -euo pipefail
tr -s ' \n' '\n\n' <"${1:?usage: $0 workload.txt}" | grep -v '^$' |
  awk 'NR > 1301160 && NR <= 1302360 { printf "%d,%d\n", NR - 1301161, int($1 / 8) }'

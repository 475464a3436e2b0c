#!/usr/bin/env python3
"""Turns one of the Azure LLM inference traces 2023 (AzureLLMInferenceTrace_{code,conv}.csv: one
row per request, TIMESTAMP,ContextTokens,GeneratedTokens) into the rates pipescale's trace reader
takes: a line "SECONDS,RPS" per second from the first request, the requests that arrived in it.
Token counts are dropped: a pipeline's request here is one inference, whatever its size.
  bench/traces/azure-llm-to-rates.py AzureLLMInferenceTrace_code.csv NAME > azure-llm-code.csv
"""
import csv
import datetime
import sys

HEADER = """# {name}: requests per second, derived from the Azure LLM inference trace 2023
# ({source}), Azure Public Dataset, https://github.com/Azure/AzurePublicDataset,
# licensed CC BY 4.0 (https://creativecommons.org/licenses/by/4.0/). Changed: each request's
# arrival time is reduced to the count of requests in its second, counted from the first
# request (2023-11-16 {start} UTC); token counts are dropped. Cite: Patel et al., "Splitwise:
# Efficient generative LLM inference using phase splitting", ISCA 2024.
# {requests} requests over {seconds} s (mean {mean:.2f}/s, busiest second {peak}).
# SECONDS,RPS (the rate from that second on)
"""


def main(path, name):
    with open(path, newline="") as f:
        stamps = [datetime.datetime.strptime(row["TIMESTAMP"][:26], "%Y-%m-%d %H:%M:%S.%f")
                  for row in csv.DictReader(f)]
    first = stamps[0]
    counts = [0] * (int((stamps[-1] - first).total_seconds()) + 1)
    for stamp in stamps:
        counts[int((stamp - first).total_seconds())] += 1
    sys.stdout.write(HEADER.format(name=name, source=path.rsplit("/", 1)[-1],
                                   start=first.strftime("%H:%M:%S"), requests=len(stamps),
                                   seconds=len(counts), mean=len(stamps) / len(counts),
                                   peak=max(counts)))
    for second, count in enumerate(counts):
        sys.stdout.write(f"{second},{count}\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

#!/usr/bin/env python3
"""Writes data/topologies/philly-fat-tree.yaml from Philly's machine list.

Run once by hand (CI does not run it): python3 scripts/gen_philly_topology.py
  ../shared/traces/philly/machine_list/cluster_machine_list.csv > data/topologies/philly-fat-tree.yaml
Machines are grouped into racks by type in machine-id order (8 eight-GPU or 16
two-GPU hosts per rack); docs/topology.md gives the assumptions."""
import csv, re, sys

rows = list(csv.reader(open(sys.argv[1])))[1:]
m = [(r[0].strip(), int(r[1])) for r in rows if r and r[0].strip()]
key = lambda x: int(re.sub(r"\D", "", x[0]))
big = sorted([x for x in m if x[1] == 8], key=key)
small = sorted([x for x in m if x[1] == 2], key=key)
other = [x for x in m if x[1] not in (2, 8)]
assert not other, other
print("""# Philly's 552 machines (msr-fiddle/philly-traces cluster_machine_list: 231 x 8-GPU
# 24 GB, 321 x 2-GPU 12 GB) on a fat tree, as a what-if on today's hardware (the
# trace does not describe Philly's network, and its P40/K80-class GPUs are
# outside the planner's model): each 8-GPU host an HGX-style NVSwitch board,
# each 2-GPU host a bridged NVLink pair; racks of 8 eight-GPU or 16 two-GPU
# hosts behind a ToR with a 200 Gb/s NIC per GPU; ToRs 2:1 oversubscribed to a
# non-blocking spine. Written by scripts/gen_philly_topology.py; see
# docs/topology.md for the sources of each figure.
version: 1
name: philly-fat-tree
links:
  leaf: {gbps: 25, latency_us: 5, hops: 1, oversubscription: 2}
  spine: {gbps: 25, latency_us: 8.1, hops: 3}
host_types:
  hgx8:
    gpus: 8
    nvlink: true
    link: {gbps: 300, latency_us: 3, hops: 1}
  pair2:
    gpus: 2
    nvlink: true
    link: {gbps: 56.25, latency_us: 3, hops: 1}
root:
  level: spine
  name: spine
  children:""")
def racks(hosts, per, prefix, htype):
    for i in range(0, len(hosts), per):
        chunk = [h for h, _ in hosts[i:i + per]]
        print(f"    - level: leaf\n      name: {prefix}{i // per + 1:02d}\n      hosts: [{', '.join(chunk)}]\n      host_type: {htype}")
racks(big, 8, "rack8-", "hgx8")
racks(small, 16, "rack2-", "pair2")

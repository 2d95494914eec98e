#pragma once

#include <string>
#include <vector>

namespace fulgur {

/// Expands a SLURM hostlist expression (SLURM_NODELIST, SLURM_JOB_NODELIST)
/// into host names, in the order `scontrol show hostnames` prints them:
///   "jwb[0001-0004,0007]"     -> jwb0001 jwb0002 jwb0003 jwb0004 jwb0007
///                                (a range keeps the zero padding of its low bound)
///   "a1,b[1-2]"               -> a1 b1 b2   (top-level commas separate entries)
///   "rack[1-2]-node[01-02]"   -> rack1-node01 rack1-node02 rack2-node01 rack2-node02
///                                (several groups: cartesian product, leftmost varies slowest)
///   "node7"                   -> node7
/// Throws std::invalid_argument starting "[expand_hostlist]" and quoting the
/// text for an empty list or entry, unbalanced or nested brackets, an empty
/// or non-numeric range, a reversed range, or an expansion of more than
/// 1,048,576 names (a typo like "[0-99999999]" must not exhaust memory).
std::vector<std::string> expand_hostlist(const std::string& text);

}  // namespace fulgur

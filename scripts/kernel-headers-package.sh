#!/usr/bin/env bash
# Prints the apt package with the newest kernel's include/linux/mlx5/mlx5_ifc.h, the header
# test_devx_layout checks te4j's DevX command layout against. Debian splits it into
# linux-headers-<version>-common (linux-headers-6.12.117+deb12-common, -6.1.0-57-common);
# Ubuntu has no -common package and ships it in linux-headers-<version>-<n> (-6.8.0-45).
# Reads apt's local package lists (run apt-get update first); prints nothing when neither exists.
set -euo pipefail
names=$(apt-cache pkgnames linux-headers- 2>/dev/null || true)
newest() { grep -E "$1" <<<"$names" | sort -V | tail -n 1 || true; }
debian=$(newest '^linux-headers-[0-9][0-9.]*(-[0-9]+|\+deb[0-9]+)-common$')
if [ -n "$debian" ]; then
  echo "$debian"
else
  newest '^linux-headers-[0-9][0-9.]*-[0-9]+$'
fi

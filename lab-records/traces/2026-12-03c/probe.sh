#!/bin/bash
# ext4 checkpointing on the lab VM (6.18): committed metadata reaches its
# home blocks through the flusher's writeback of the block device inode.
# 64 files of 16 KiB on a fresh 512 MiB ext4 (mke2fs 1.47 defaults) on a
# tmpfs-backed loop device, remounted so every file's atime <= mtime; the
# files are read once (relatime updates each atime) with perf tracing
# block:block_rq_issue for 50 s. Output: block_rq_issue.txt (loop0 only).
# Read it: the jbd2 commit (WSM at the journal, 5.5 s after the reads),
# then the kworker's "WM 20480 () 584 + 40" 33.3 s later: blocks 73-77,
# the inode-table blocks of inodes 12-75. (ext4lazyinit's zeroing of the
# inode tables right after mkfs is unrelated.) Run as root.
set -e
D=$(mktemp -d)
mount -t tmpfs -o size=600m tmpfs $D
truncate -s 512M $D/img
L=$(losetup -f --show $D/img)
mkfs.ext4 -q -F $L
mkdir -p $D/m
mount $L $D/m
for i in $(seq 0 63); do dd if=/dev/urandom of=$D/m/f$i bs=16k count=1 status=none; done
sync; umount $D/m; mount $L $D/m
perf record -q -e block:block_rq_issue -a -o $D/perf.data -- sleep 50 &
sleep 1
cat $D/m/f* > /dev/null
wait
M=$(( 0x$(stat -c %t $L) )); m=$(( 0x$(stat -c %T $L) ))
perf script -i $D/perf.data | grep " $M,$m " | awk '{$1=$1};1' > block_rq_issue.txt
umount $D/m; losetup -d $L; umount $D; rmdir $D

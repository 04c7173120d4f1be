//! The file-system system calls the syscall sampler times, by number on this machine's
//! architecture, named as strace names them ("pwrite64", "newfstatat").

/// (number, name) of each timed call on x86_64 (arch/x86/entry/syscalls/syscall_64.tbl).
#[cfg(target_arch = "x86_64")]
pub const FS_SYSCALLS: &[(u32, &str)] = &[
    (0, "read"),
    (1, "write"),
    (2, "open"),
    (3, "close"),
    (4, "stat"),
    (5, "fstat"),
    (6, "lstat"),
    (8, "lseek"),
    (17, "pread64"),
    (18, "pwrite64"),
    (19, "readv"),
    (20, "writev"),
    (21, "access"),
    (40, "sendfile"),
    (72, "fcntl"),
    (73, "flock"),
    (74, "fsync"),
    (75, "fdatasync"),
    (76, "truncate"),
    (77, "ftruncate"),
    (78, "getdents"),
    (82, "rename"),
    (83, "mkdir"),
    (84, "rmdir"),
    (85, "creat"),
    (86, "link"),
    (87, "unlink"),
    (88, "symlink"),
    (89, "readlink"),
    (90, "chmod"),
    (91, "fchmod"),
    (92, "chown"),
    (93, "fchown"),
    (94, "lchown"),
    (137, "statfs"),
    (138, "fstatfs"),
    (162, "sync"),
    (187, "readahead"),
    (188, "setxattr"),
    (189, "lsetxattr"),
    (190, "fsetxattr"),
    (191, "getxattr"),
    (192, "lgetxattr"),
    (193, "fgetxattr"),
    (194, "listxattr"),
    (195, "llistxattr"),
    (196, "flistxattr"),
    (197, "removexattr"),
    (198, "lremovexattr"),
    (199, "fremovexattr"),
    (217, "getdents64"),
    (221, "fadvise64"),
    (257, "openat"),
    (258, "mkdirat"),
    (259, "mknodat"),
    (260, "fchownat"),
    (262, "newfstatat"),
    (263, "unlinkat"),
    (264, "renameat"),
    (265, "linkat"),
    (266, "symlinkat"),
    (267, "readlinkat"),
    (268, "fchmodat"),
    (269, "faccessat"),
    (275, "splice"),
    (277, "sync_file_range"),
    (280, "utimensat"),
    (285, "fallocate"),
    (295, "preadv"),
    (296, "pwritev"),
    (303, "name_to_handle_at"),
    (304, "open_by_handle_at"),
    (306, "syncfs"),
    (316, "renameat2"),
    (326, "copy_file_range"),
    (327, "preadv2"),
    (328, "pwritev2"),
    (332, "statx"),
    (437, "openat2"),
    (439, "faccessat2"),
];

/// (number, name) of each timed call on aarch64 (include/uapi/asm-generic/unistd.h).
#[cfg(target_arch = "aarch64")]
pub const FS_SYSCALLS: &[(u32, &str)] = &[
    (5, "setxattr"),
    (6, "lsetxattr"),
    (7, "fsetxattr"),
    (8, "getxattr"),
    (9, "lgetxattr"),
    (10, "fgetxattr"),
    (11, "listxattr"),
    (12, "llistxattr"),
    (13, "flistxattr"),
    (14, "removexattr"),
    (15, "lremovexattr"),
    (16, "fremovexattr"),
    (25, "fcntl"),
    (32, "flock"),
    (33, "mknodat"),
    (34, "mkdirat"),
    (35, "unlinkat"),
    (36, "symlinkat"),
    (37, "linkat"),
    (38, "renameat"),
    (43, "statfs"),
    (44, "fstatfs"),
    (45, "truncate"),
    (46, "ftruncate"),
    (47, "fallocate"),
    (48, "faccessat"),
    (52, "fchmod"),
    (53, "fchmodat"),
    (54, "fchownat"),
    (55, "fchown"),
    (56, "openat"),
    (57, "close"),
    (61, "getdents64"),
    (62, "lseek"),
    (63, "read"),
    (64, "write"),
    (65, "readv"),
    (66, "writev"),
    (67, "pread64"),
    (68, "pwrite64"),
    (69, "preadv"),
    (70, "pwritev"),
    (71, "sendfile"),
    (76, "splice"),
    (78, "readlinkat"),
    (79, "newfstatat"),
    (80, "fstat"),
    (81, "sync"),
    (82, "fsync"),
    (83, "fdatasync"),
    (84, "sync_file_range"),
    (88, "utimensat"),
    (213, "readahead"),
    (223, "fadvise64"),
    (264, "name_to_handle_at"),
    (265, "open_by_handle_at"),
    (267, "syncfs"),
    (276, "renameat2"),
    (285, "copy_file_range"),
    (286, "preadv2"),
    (287, "pwritev2"),
    (291, "statx"),
    (437, "openat2"),
    (439, "faccessat2"),
];

/// No table for other architectures: the syscall sampler times nothing there.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub const FS_SYSCALLS: &[(u32, &str)] = &[];

/// The name of a timed call, or None for a number not in the table.
pub fn name(nr: u32) -> Option<&'static str> {
    FS_SYSCALLS.iter().find(|(n, _)| *n == nr).map(|(_, name)| *name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_timed_call_has_one_number_and_one_name_below_the_kernels_table_size() {
        for (i, (nr, name)) in FS_SYSCALLS.iter().enumerate() {
            assert!(*nr < 512, "{name}: {nr} is past the kernel program's table (MAX_NR 512)");
            for (other_nr, other_name) in &FS_SYSCALLS[i + 1..] {
                assert!(nr != other_nr && name != other_name, "{name}/{nr} vs {other_name}/{other_nr}");
            }
        }
    }

    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    #[test]
    fn the_x86_64_numbers_are_the_c_librarys() {
        // The C library's own constants (libc crate) for a sample of the table.
        for (nr, name) in [
            (libc::SYS_pread64, "pread64"),
            (libc::SYS_pwrite64, "pwrite64"),
            (libc::SYS_openat, "openat"),
            (libc::SYS_fsync, "fsync"),
            (libc::SYS_statx, "statx"),
            (libc::SYS_newfstatat, "newfstatat"),
            (libc::SYS_copy_file_range, "copy_file_range"),
            (libc::SYS_getdents64, "getdents64"),
        ] {
            assert_eq!(super::name(nr as u32), Some(name));
        }
    }
}

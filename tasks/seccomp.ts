// The sandbox's seccomp filter (tasks/sandbox.ts hands it to bubblewrap): a classic-BPF program assembled here,
// so no libseccomp is needed. It refuses new processes (threads stay allowed), namespaces, every way to mount
// (the old mount(2) and the new mount API), kernel and clock administration, reading other processes, and the
// kernel interfaces a sandboxed program has no use for. Where no memory cgroup counts the sandbox's memory
// (tasks/sandbox-memory.ts, mode 'rlimits'), it also refuses the memory that RLIMIT_AS does not count:
// memfd_create, SysV shared memory, POSIX message queues, POSIX timers and inotify.
import { SandboxUnavailableError } from './sandbox-errors.ts';

const AUDIT_ARCH_X86_64 = 0xc000003e;
const AUDIT_ARCH_AARCH64 = 0xc00000b7;
const RET_ALLOW = 0x7fff0000;
const RET_KILL_PROCESS = 0x80000000;
const RET_ERRNO = 0x00050000;
const EPERM = 1;
const ENOSYS = 38;
const CLONE_THREAD = 0x00010000;
// CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET: refused even beside CLONE_THREAD.
const CLONE_NEW_NAMESPACES = 0x7e020000;

/** Syscall numbers: [x86-64, arm64]; null where the architecture has no such call. */
const NUMBERS: Record<string, [number | null, number | null]> = {
  // processes, other processes, namespaces
  fork: [57, null],
  vfork: [58, null],
  ptrace: [101, 117],
  process_vm_readv: [310, 270],
  process_vm_writev: [311, 271],
  process_madvise: [440, 440],
  process_mrelease: [448, 448],
  pidfd_getfd: [438, 438],
  kcmp: [312, 272],
  unshare: [272, 97],
  setns: [308, 268],
  // mounts, old and new API, and ways around the file system view
  mount: [165, 40],
  umount2: [166, 39],
  pivot_root: [155, 41],
  chroot: [161, 51],
  open_tree: [428, 428],
  move_mount: [429, 429],
  fsopen: [430, 430],
  fsconfig: [431, 431],
  fsmount: [432, 432],
  fspick: [433, 433],
  mount_setattr: [442, 442],
  name_to_handle_at: [303, 264],
  open_by_handle_at: [304, 265],
  quotactl: [179, 60],
  quotactl_fd: [443, 443],
  // the kernel, the clock and the machine
  init_module: [175, 105],
  finit_module: [313, 273],
  delete_module: [176, 106],
  kexec_load: [246, 104],
  kexec_file_load: [320, 294],
  reboot: [169, 142],
  swapon: [167, 224],
  swapoff: [168, 225],
  acct: [163, 89],
  syslog: [103, 116],
  sethostname: [170, 161],
  setdomainname: [171, 162],
  settimeofday: [164, 170],
  clock_settime: [227, 112],
  clock_adjtime: [305, 266],
  adjtimex: [159, 171],
  iopl: [172, null],
  ioperm: [173, null],
  modify_ldt: [154, null],
  vhangup: [153, 58],
  personality: [135, 92],
  lookup_dcookie: [212, 18],
  uselib: [134, null],
  ustat: [136, null],
  sysfs: [139, null],
  _sysctl: [156, null],
  // kernel interfaces with their own attack surface or memory outside every limit
  bpf: [321, 280],
  perf_event_open: [298, 241],
  userfaultfd: [323, 282],
  io_uring_setup: [425, 425],
  io_uring_enter: [426, 426],
  io_uring_register: [427, 427],
  add_key: [248, 217],
  request_key: [249, 218],
  keyctl: [250, 219],
  fanotify_init: [300, 262],
  memfd_secret: [447, 447],
  mbind: [237, 235],
  set_mempolicy: [238, 237],
  set_mempolicy_home_node: [450, 450],
  migrate_pages: [256, 238],
  move_pages: [279, 239],
  // memory RLIMIT_AS does not count (refused only where no memory cgroup counts it)
  memfd_create: [319, 279],
  shmget: [29, 194],
  mq_open: [240, 180],
  timer_create: [222, 107],
  inotify_init: [253, null],
  inotify_init1: [294, 26],
};

/** Refused as well where no memory cgroup counts the sandbox's memory (their memory escapes RLIMIT_AS). */
export const UNCOUNTED_MEMORY_SYSCALLS: readonly string[] = [
  'memfd_create',
  'shmget',
  'mq_open',
  'timer_create',
  'inotify_init',
  'inotify_init1',
];
/** Refused in every sandbox. */
export const DENIED_SYSCALLS: readonly string[] = Object.keys(NUMBERS).filter(
  (n) => !UNCOUNTED_MEMORY_SYSCALLS.includes(n),
);

const ARCHES: Record<string, { audit: number; column: 0 | 1; clone: number; clone3: number }> = {
  x64: { audit: AUDIT_ARCH_X86_64, column: 0, clone: 56, clone3: 435 },
  arm64: { audit: AUDIT_ARCH_AARCH64, column: 1, clone: 220, clone3: 435 },
};

type Insn = { code: number; jt: number | string; jf: number | string; k: number; label?: string };

function assemble(insns: Insn[]): Buffer {
  const labels = new Map<string, number>();
  insns.forEach((ins, i) => {
    if (ins.label) labels.set(ins.label, i);
  });
  const buf = Buffer.alloc(insns.length * 8);
  insns.forEach((ins, i) => {
    const rel = (t: number | string): number => {
      if (typeof t === 'number') return t;
      const at = labels.get(t);
      if (at === undefined || at <= i || at - i - 1 > 255) throw new Error(`seccomp: bad jump to ${t}`);
      return at - i - 1;
    };
    buf.writeUInt16LE(ins.code, i * 8);
    buf.writeUInt8(rel(ins.jt), i * 8 + 2);
    buf.writeUInt8(rel(ins.jf), i * 8 + 3);
    buf.writeUInt32LE(ins.k >>> 0, i * 8 + 4);
  });
  return buf;
}

/** Syscall numbers refused on `arch` (x64 or arm64). */
export function deniedNumbers(arch: string, countedMemory: boolean): number[] {
  const a = ARCHES[arch];
  if (!a) throw new SandboxUnavailableError(`The sandbox's seccomp filter knows x64 and arm64, not ${arch}.`);
  const names = countedMemory ? DENIED_SYSCALLS : [...DENIED_SYSCALLS, ...UNCOUNTED_MEMORY_SYSCALLS];
  return names.map((n) => NUMBERS[n]![a.column]).filter((nr): nr is number => nr !== null);
}

/**
 * The seccomp filter for `arch`. `countedMemory`: a memory cgroup counts all of the sandbox's memory, so the
 * calls whose memory RLIMIT_AS misses may stay allowed.
 */
export function seccompProgram(opts: { countedMemory: boolean; arch?: string }): Buffer {
  const arch = opts.arch ?? process.arch;
  const denied = deniedNumbers(arch, opts.countedMemory);
  const sc = ARCHES[arch]!;
  const LD_W_ABS = 0x20,
    JEQ = 0x15,
    JGE = 0x35,
    JSET = 0x45,
    RET = 0x06;
  const p: Insn[] = [
    { code: LD_W_ABS, jt: 0, jf: 0, k: 4 }, // seccomp_data.arch
    { code: JEQ, jt: 0, jf: 'kill', k: sc.audit }, // a foreign ABI (e.g. i386 int 0x80) gets killed
    { code: LD_W_ABS, jt: 0, jf: 0, k: 0 }, // seccomp_data.nr
  ];
  if (arch === 'x64') p.push({ code: JGE, jt: 'eperm', jf: 0, k: 0x40000000 }); // x32 ABI
  for (const nr of denied) p.push({ code: JEQ, jt: 'eperm', jf: 0, k: nr });
  // glibc falls back from clone3 (whose flags sit behind a pointer, out of BPF's reach) to clone on ENOSYS.
  p.push({ code: JEQ, jt: 'enosys', jf: 0, k: sc.clone3 });
  p.push({ code: JEQ, jt: 0, jf: 'allow', k: sc.clone });
  p.push({ code: LD_W_ABS, jt: 0, jf: 0, k: 16 }); // low word of args[0] = clone flags
  p.push({ code: JSET, jt: 'eperm', jf: 0, k: CLONE_NEW_NAMESPACES });
  p.push({ code: JSET, jt: 'allow', jf: 'eperm', k: CLONE_THREAD });
  p.push({ code: RET, jt: 0, jf: 0, k: RET_ALLOW, label: 'allow' });
  p.push({ code: RET, jt: 0, jf: 0, k: RET_ERRNO | EPERM, label: 'eperm' });
  p.push({ code: RET, jt: 0, jf: 0, k: RET_ERRNO | ENOSYS, label: 'enosys' });
  p.push({ code: RET, jt: 0, jf: 0, k: RET_KILL_PROCESS, label: 'kill' });
  return assemble(p);
}

// SPDX-License-Identifier: GPL-2.0
//
// jitterlab's BPF back end of `run --trace` (docs/tracing.md, "Back ends").
//
// One program per tracepoint the tracefs back end enables (src/trace/decode.rs,
// REQUIRED_EVENTS and the optional irq_vectors / nmi events). Each program keeps to the
// CPUs being traced (the `traced_cpus` map, the tracefs back end's tracing_cpumask), applies
// the same filters as the tracefs instance (timer starts of the followed threads only; wakeups
// of the followed threads and of real-time tasks only; timer expiries of the measuring
// threads' timer callbacks only) and writes one compact binary record per event.
// src/trace/bpf/record.rs decodes these records into the same events the tracefs reader
// decodes, so the split and the explanations are computed by the same code for both back ends.
//
// Two ways to hand the records over (docs/tracing.md, "In-kernel reduction"):
//
// - streamed: every record goes to the `events` ring buffer as it happens;
// - reduced (config.reduce): every record goes to this CPU's `stage` first. When the
//   measuring thread of the CPU gives up its CPU again after a wakeup, or its next timer
//   expires before it did (see hrtimer_expire_entry), the program decides:
//   a wakeup that was not later than config.explain_above_ns costs one `jl_cycle` record (the
//   four events the IRQ/thread split needs) and the stage is dropped; a later one gets the
//   whole stage (every event since the thread last slept), which the explanation reads. The
//   decision's bound is never below the sample's latency (see decide()), so no sample that
//   user space explains lacks its events.
//
// Either way, when a measuring thread gets its CPU already later than the threshold from
// another task, the kernel stack of that task is written as a `jl_stack` record.
//
// A followed thread's timer that expires on another CPU than the one that armed it (the
// kernel's timer migration moves the timers of a `nohz_full` CPU to a housekeeping CPU), and
// a followed thread's wakeup on another CPU than its own, are not staged: that CPU's stage is
// its own measuring thread's, dropped when that thread was on time, and with it the other
// thread's expiry and wakeup. They go to the ring buffer at once, under the CPU they happened
// on; user space joins them as it joins tracefs's (src/trace/migration.rs, measured_targets).
// Such a timer's arming is in its own CPU's stage, dropped when the wakeup before was on time:
// it is sent at the thread's next arming, which finds it neither expired there nor sent.
//
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

typedef _Bool bool;

// ---- kernel types, only the fields read (CO-RE) ----

struct thread_info {
	__u32 cpu;
} __attribute__((preserve_access_index));

struct task_struct {
	struct thread_info thread_info;
	int prio;
	int pid;
	char comm[16];
} __attribute__((preserve_access_index));

// Kernels before 5.16 keep the CPU in task_struct.
struct task_struct___cpu_in_task {
	unsigned int cpu;
} __attribute__((preserve_access_index));

struct timerqueue_node {
	__s64 expires;
} __attribute__((preserve_access_index));

struct hrtimer;

struct hrtimer_clock_base {
	__s64 offset;
	// The timer whose callback runs now on this base (kernels since 4.16).
	struct hrtimer *running;
} __attribute__((preserve_access_index));

struct hrtimer {
	struct timerqueue_node node;
	__s64 _softexpires;
	void *function;
	struct hrtimer_clock_base *base;
} __attribute__((preserve_access_index));

struct irqaction {
	const char *name;
} __attribute__((preserve_access_index));

// ---- the records (src/trace/bpf/record.rs decodes them; keep both in step) ----

enum jl_kind {
	JL_HRTIMER_START = 1,
	JL_HRTIMER_EXPIRE = 2,
	JL_WAKING = 3,
	JL_SWITCH = 4,
	JL_IRQ_ENTRY = 5,
	JL_IRQ_EXIT = 6,
	JL_SOFTIRQ_ENTRY = 7,
	JL_SOFTIRQ_EXIT = 8,
	JL_VECTOR_ENTRY = 9,
	JL_VECTOR_EXIT = 10,
	JL_NMI = 11,
	// Records this CPU could not write (the ring buffer was full) before this one.
	JL_LOST = 12,
	// One wakeup below the threshold, reduced in the kernel (struct jl_cycle).
	JL_CYCLE = 13,
	// The kernel stack of the task that held a late measuring thread's CPU.
	JL_STACK = 14,
};

// 16 bytes before every payload: CLOCK_MONOTONIC time, the current task (the tracefs
// common_pid), the CPU and what the record is.
struct jl_header {
	__u64 ts;
	__s32 pid;
	__u16 cpu;
	__u16 kind;
};

struct jl_task {
	__s32 pid;
	__s32 prio;
	char comm[16];
};

struct jl_hrtimer_start {
	struct jl_header h;
	__u64 hrtimer;
	__s64 expires;
	__s64 softexpires;
};

struct jl_hrtimer_expire {
	struct jl_header h;
	__u64 hrtimer;
	__s64 now;
};

struct jl_waking {
	struct jl_header h;
	struct jl_task task;
	__s32 target_cpu;
	__u32 pad;
};

struct jl_switch {
	struct jl_header h;
	struct jl_task prev;
	struct jl_task next;
};

#define JL_IRQ_NAME 32

struct jl_irq {
	struct jl_header h;
	__s32 irq;
	char name[JL_IRQ_NAME];
	__u32 pad;
};

// Softirq vector, interrupt-vector index (JL_VECTOR_*), or nothing.
struct jl_small {
	struct jl_header h;
	__u32 value;
	__u32 pad;
};

// NMI length, or the number of records lost.
struct jl_count {
	struct jl_header h;
	__u64 count;
};

// The four events of one wakeup the split needs (src/trace/split.rs), in one record written
// when the wakeup is decided not late: the timer's arming (left out when it was already sent
// in full: flag JL_CYCLE_ARMED clear), its expiry, the thread's wakeup (when traced: flag
// JL_CYCLE_WAKING) and the switch to it. The header's time is the switch's, its pid the thread.
#define JL_CYCLE_ARMED 1
#define JL_CYCLE_WAKING 2

struct jl_cycle {
	struct jl_header h;
	__u64 flags;
	__u64 hrtimer;
	__s64 expires;
	__s64 softexpires;
	__u64 armed_ts;
	__s32 armed_pid;
	__s32 expiry_pid;
	__u64 expiry_ts;
	__s64 now;
	__u64 waking_ts;
	__s32 waking_pid;
	__s32 target_cpu;
	struct jl_task woken;
	struct jl_task prev;
	struct jl_task next;
};

#define JL_STACK_DEPTH 32

struct jl_stack {
	struct jl_header h;
	__u32 frames;
	__u32 pad;
	__u64 ips[JL_STACK_DEPTH];
};

// ---- maps ----

#define JL_MAX_FUNCTIONS 8

// What user space sets once the measuring threads' ids are known (all 64-bit words, so that
// user space writes it as an array of u64 on any byte order).
//
// The words every program reads come first, in the value's first cache line.
struct jl_config {
	// Nonzero: timer starts and wakeups are kept for the threads in `tids` only.
	__u64 filter_tids;
	// Nonzero: records are staged per CPU and reduced (see the top of this file).
	__u64 reduce;
	// Wakeups later than this are explained by user space, ns (0: none is known late).
	__u64 explain_above_ns;
	// Nonzero: the thread's due time may lie before the timer's expiry by up to the time it
	// ran before arming it (relative sleeps: src/measure/wake/method.rs, Expiry::NearDue).
	__u64 near_due;
	// Timer expiries are kept for these callbacks only (none: all are kept).
	__u64 n_functions;
	__u64 functions[JL_MAX_FUNCTIONS];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct jl_config);
} config SEC(".maps");

// One entry per possible CPU: nonzero when traced. The loader sizes it.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} traced_cpus SEC(".maps");

// The followed threads (measuring threads and IPC senders). The loader sizes it. The value is
// the due time of the thread's wakeup under way (CLOCK_MONOTONIC ns, 0: none), which decides
// whether the culprit's stack is taken at its switch-in (see due_of_wakeup()).
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __s32);
	__type(value, __u64);
} tids SEC(".maps");

// The timers the followed threads armed (reduced mode): the hrtimer's address, and the CPU
// that armed it last. An expiry of one of them on another CPU is not staged there (see the
// top of this file). LRU: a thread's timers are re-armed every cycle and stay; the timers of
// sleeps whose stack frames are gone are the ones evicted. The loader sizes it.
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, __u64);
	__type(value, __u32);
} timers SEC(".maps");

// Per CPU: records lost in all (for run.json) and lost since the last record written (sent
// ahead of the next record, as the tracefs reader marks a page with missed events); and of
// the total, those a full stage overwrote before its late wakeup was decided (run.json
// `events_lost_in_stage`: not the ring buffer's fault, so not cured by a larger one).
struct jl_lost {
	__u64 total;
	__u64 pending;
	__u64 in_stage;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct jl_lost);
} lost SEC(".maps");

// The records. The loader sizes it (a power of two number of pages).
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} events SEC(".maps");

// ---- the stage and the wakeup being decided (reduced mode) ----

// Records staged per CPU: slots of JL_SLOT bytes, a cache line (the largest staged record is
// jl_switch; a record's length follows from its kind, record_len()), JL_STAGE slots per CPU (a
// power of two), CPU c's at [c * JL_STAGE, (c + 1) * JL_STAGE). The loader sizes the map for
// the traced CPUs. A stage longer than JL_STAGE keeps its newest records; flush() says when
// that cost a late wakeup any of its own. Each decided stage is followed by one that begins at
// the CPU's first slot (decide()): a wakeup's few records reuse the same cache lines every
// wakeup, where a stage going on through all 1024 slots wrote each record to a line not
// touched for 1024 records (bench/README.md, issue 44).
#define JL_SLOT 64
#define JL_STAGE 1024

struct jl_slot {
	__u8 data[JL_SLOT];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct jl_slot);
} stage SEC(".maps");

// A timer a followed thread armed (its hrtimer_start).
struct jl_armed {
	__u64 hrtimer;
	__s64 expires;
	__s64 softexpires;
	__u64 ts;
	__s32 pid;
	// Nonzero: its hrtimer_start record went out already (in a flushed stage).
	__u32 sent;
	// Its place in the stage (jl_cpu.written when it was staged).
	__u64 slot;
	// When the thread last got its CPU before arming it (the near-due bound), 0: unknown.
	__u64 ran_since;
};

#define JL_HAVE_NEXT 1
#define JL_HAVE_EXPIRY 2
#define JL_HAVE_WAKING 4
#define JL_HAVE_SWITCH 8

// Per CPU. The first four words are read by user space (src/trace/bpf/mod.rs, CpuState).
struct jl_cpu {
	// Records ever staged, and where the undecided stage begins (counts of slots).
	__u64 written;
	__u64 start;
	// The time of the oldest event of this CPU not handed over yet, 0: none. The reader takes
	// a CPU's trace as complete only up to it.
	__u64 pending_since;
	// Events the programs handled on this CPU (reduced: most never leave the kernel).
	__u64 seen;
	// JL_HAVE_*: `next` holds a timer armed and not yet expired; the wakeup being decided has
	// its expiry, its sched_waking, its switch-in.
	__u64 have;
	// Programs of this CPU between a stage record's claim and its fill: 1 in one, 2 in one
	// that interrupted another (stage_make_room). Nested programs end before the one they
	// interrupted goes on, so a plain increment and decrement are exact. In the first cache
	// line, with the words every staging program touches.
	__u32 filling;
	__s32 target_cpu;
	struct jl_armed next;
	// The wakeup being decided.
	struct jl_armed armed;
	__u64 expiry_ts;
	__s64 now;
	// Its due time on CLOCK_MONOTONIC (the expiry less its clock base's offset), ns.
	__s64 due;
	__s32 expiry_pid;
	__s32 waking_pid;
	__u64 waking_ts;
	struct jl_task woken;
	__u64 switch_ts;
	struct jl_task prev;
	struct jl_task next_task;
	// When a followed thread last got this CPU.
	__u64 last_switch_in;
	// The last timer of a measuring thread's callback that expired here, and its due time
	// (its soft expiry on CLOCK_MONOTONIC): the due time of a wakeup from inside its callback.
	__u64 expiring;
	__s64 expiring_due;
};

_Static_assert(sizeof(struct jl_cpu) == 304, "keep CPU_STATE_WORDS of src/trace/bpf/mod.rs in step");
_Static_assert(sizeof(struct jl_switch) <= JL_SLOT, "a staged record must fit its slot");
_Static_assert(sizeof(struct jl_irq) <= JL_SLOT, "a staged record must fit its slot");
_Static_assert(sizeof(struct jl_slot) == JL_SLOT, "a slot is one cache line");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct jl_cpu);
} cpu_state SEC(".maps");

// ---- helpers ----
//
// Records are submitted with BPF_RB_NO_WAKEUP: the reader polls the ring buffer on its own
// schedule (src/trace/bpf/mod.rs), so no program needs to wake it, which the kernel would do
// through an irq_work (an interrupt on the traced CPU) after each drain.

static __always_inline bool cpu_traced(__u32 cpu)
{
	__u32 *on = bpf_map_lookup_elem(&traced_cpus, &cpu);
	return on && *on;
}

static __always_inline struct jl_config *get_config(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&config, &zero);
}

static __always_inline struct jl_cpu *get_cpu_state(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&cpu_state, &zero);
}

// The due-time word of followed thread `tid` (see `tids`), or 0 when it is not followed. The
// idle tasks (pid 0 on every CPU) never are, and skip the hash lookup: an idle CPU's wakeup
// switches from its idle task, which armed its tick's timer before and is the waker in the
// timer's interrupt.
static __always_inline __u64 *followed_due(__s32 tid)
{
	return tid ? bpf_map_lookup_elem(&tids, &tid) : 0;
}

static __always_inline bool followed(__s32 tid)
{
	return followed_due(tid) != 0;
}

static __always_inline __s32 current_pid(void)
{
	return (__s32)bpf_get_current_pid_tgid();
}

static __always_inline void fill_header(struct jl_header *h, __u64 ts, __s32 pid, __u32 cpu,
					__u16 kind)
{
	h->ts = ts;
	h->pid = pid;
	h->cpu = cpu;
	h->kind = kind;
}

// A pending count of lost records goes out ahead of the next record, so that user space
// knows where the trace has a hole. Returns 0 when the ring buffer is still full.
static __always_inline bool send_lost(struct jl_lost *l, __u64 ts, __s32 pid, __u32 cpu)
{
	if (!l || !l->pending)
		return 1;
	struct jl_count *c = bpf_ringbuf_reserve(&events, sizeof(*c), 0);
	if (!c)
		return 0;
	fill_header(&c->h, ts, pid, cpu, JL_LOST);
	c->count = l->pending;
	bpf_ringbuf_submit(c, BPF_RB_NO_WAKEUP);
	l->pending = 0;
	return 1;
}

static __always_inline void count_lost(struct jl_lost *l, __u64 n)
{
	if (l) {
		l->total += n;
		l->pending += n;
	}
}

static __always_inline struct jl_lost *get_lost(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&lost, &zero);
}

// Reserves a ring buffer record of `size` bytes and fills its header, or counts it lost.
static __always_inline void *reserve_at(__u64 size, __u16 kind, __u32 cpu, __u64 ts, __s32 pid)
{
	struct jl_lost *l = get_lost();
	if (!send_lost(l, ts, pid, cpu)) {
		count_lost(l, 1);
		return 0;
	}
	struct jl_header *h = bpf_ringbuf_reserve(&events, size, 0);
	if (!h) {
		count_lost(l, 1);
		return 0;
	}
	fill_header(h, ts, pid, cpu, kind);
	return h;
}

// Copies a staged record to the ring buffer, or counts it lost.
static __always_inline void output(struct jl_lost *l, void *data, __u32 len, __u32 cpu)
{
	struct jl_header *h = data;
	if (!send_lost(l, h->ts, -1, cpu) ||
	    bpf_ringbuf_output(&events, data, len, BPF_RB_NO_WAKEUP))
		count_lost(l, 1);
}

// Takes the next slot of this CPU's stage for a record and fills its header.
// The slot is taken atomically: a program on this CPU may interrupt another (an interrupt's
// during a softirq's, an NMI's anywhere), and each must get its own slot.
static __always_inline void *stage_claim(struct jl_cpu *st, __u16 kind, __u32 cpu,
					 __u64 ts, __s32 pid)
{
	__u64 n = __sync_fetch_and_add(&st->written, 1);
	__u32 key = cpu * JL_STAGE + (__u32)(n & (JL_STAGE - 1));
	struct jl_slot *s = bpf_map_lookup_elem(&stage, &key);
	if (!s)
		return 0;
	fill_header((struct jl_header *)s->data, ts, pid, cpu, kind);
	if (!st->pending_since)
		st->pending_since = ts;
	return s->data;
}

// Writes one record of type T: staged when reducing, else straight to the ring buffer. FILL
// fills the payload through `r`. ROOM (a constant): the program may send a full stage of a
// late wakeup first (stage_make_room); the entries of interrupts, softirqs and vectors, the
// scheduler's and the timers' events do, their exits and NMIs not (each exit follows its
// entry, so at most the nesting depth of exits comes between two records that may send: far
// fewer than JL_STAGE_SPARE), which keeps the verifier's work for the exits' programs as it
// was.
#define EMIT(T, KIND, CPU, C, ST, TS, ROOM, FILL)                                      \
	do {                                                                           \
		if ((ST))                                                              \
			__sync_fetch_and_add(&(ST)->seen, 1);                          \
		if ((C) && (C)->reduce && (ST)) {                                      \
			(ST)->filling++;                                               \
			if (ROOM)                                                      \
				stage_make_room((ST), (C), (CPU), (TS));               \
			T *r = stage_claim((ST), (KIND), (CPU), (TS), current_pid()); \
			if (r) {                                                       \
				FILL;                                                  \
			}                                                              \
			(ST)->filling--;                                               \
		} else {                                                               \
			T *r = reserve_at(sizeof(T), (KIND), (CPU), (TS), current_pid()); \
			if (r) {                                                       \
				FILL;                                                  \
				bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);               \
			}                                                              \
		}                                                                      \
	} while (0)

// tp_btf arguments are typed kernel pointers: fields are read with plain loads (CO-RE
// relocated), no bpf_probe_read_kernel call per field.
static __always_inline void read_task(struct jl_task *t, struct task_struct *p)
{
	t->pid = p->pid;
	t->prio = p->prio;
	__builtin_memcpy(t->comm, p->comm, sizeof(t->comm));
}

static __always_inline __s32 task_cpu(struct task_struct *p)
{
	if (bpf_core_field_exists(p->thread_info.cpu))
		return p->thread_info.cpu;
	struct task_struct___cpu_in_task *old = (void *)p;
	if (bpf_core_field_exists(old->cpu))
		return BPF_CORE_READ(old, cpu);
	return -1;
}

// How late the wakeup being decided is at `ts` at least, ns: from its due time, plus, for a
// relative sleep, the most the thread's own due time can lie before the timer's (the time it
// ran before arming it: it read its clock after it got the CPU). Never less than the sample's
// latency when `ts` is after the thread's clock read.
static __always_inline __s64 late_by(struct jl_cpu *st, struct jl_config *c, __u64 ts)
{
	__s64 late = (__s64)ts - st->due;
	if (c->near_due && st->armed.ran_since && st->armed.ts > st->armed.ran_since)
		late += st->armed.ts - st->armed.ran_since;
	return late;
}

// ---- the decision (reduced mode) ----

// The arming of the wakeup being decided, as the hrtimer_start record it was.
static __always_inline void send_armed(struct jl_cpu *st, __u32 cpu)
{
	struct jl_hrtimer_start *r =
		reserve_at(sizeof(*r), JL_HRTIMER_START, cpu, st->armed.ts, st->armed.pid);
	if (!r)
		return;
	r->hrtimer = st->armed.hrtimer;
	r->expires = st->armed.expires;
	r->softexpires = st->armed.softexpires;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

// The wakeup being decided as one jl_cycle record.
static __always_inline void send_cycle(struct jl_cpu *st, __u32 cpu)
{
	struct jl_cycle *r = reserve_at(sizeof(*r), JL_CYCLE, cpu, st->switch_ts, st->armed.pid);
	if (!r)
		return;
	r->flags = (st->armed.sent ? 0 : JL_CYCLE_ARMED) |
		   (st->have & JL_HAVE_WAKING ? JL_CYCLE_WAKING : 0);
	r->hrtimer = st->armed.hrtimer;
	r->expires = st->armed.expires;
	r->softexpires = st->armed.softexpires;
	r->armed_ts = st->armed.ts;
	r->armed_pid = st->armed.pid;
	r->expiry_pid = st->expiry_pid;
	r->expiry_ts = st->expiry_ts;
	r->now = st->now;
	r->waking_ts = st->waking_ts;
	r->waking_pid = st->waking_pid;
	r->target_cpu = st->target_cpu;
	r->woken = st->woken;
	r->prev = st->prev;
	r->next = st->next_task;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

// The length of a staged record of `kind`, bytes (0: not a kind that is staged). One constant
// per branch, so the verifier knows every length handed to bpf_ringbuf_output. Every kind
// EMIT() stages has its branch here.
static __always_inline __u32 record_len(__u16 kind)
{
	switch (kind) {
	case JL_HRTIMER_START:
		return sizeof(struct jl_hrtimer_start);
	case JL_HRTIMER_EXPIRE:
		return sizeof(struct jl_hrtimer_expire);
	case JL_WAKING:
		return sizeof(struct jl_waking);
	case JL_SWITCH:
		return sizeof(struct jl_switch);
	case JL_IRQ_ENTRY:
		return sizeof(struct jl_irq);
	case JL_IRQ_EXIT:
	case JL_SOFTIRQ_ENTRY:
	case JL_SOFTIRQ_EXIT:
	case JL_VECTOR_ENTRY:
	case JL_VECTOR_EXIT:
		return sizeof(struct jl_small);
	case JL_NMI:
		return sizeof(struct jl_count);
	default:
		return 0;
	}
}

// One record of a stage being flushed: flush()'s bpf_loop callback.
struct jl_flush {
	__u64 begin;
	__u64 end;
	__u32 cpu;
};

static long flush_one(__u64 i, void *ctx)
{
	struct jl_flush *f = ctx;
	__u64 n = f->begin + i;
	if (n >= f->end)
		return 1;
	__u32 key = f->cpu * JL_STAGE + (__u32)(n & (JL_STAGE - 1));
	struct jl_slot *s = bpf_map_lookup_elem(&stage, &key);
	if (!s)
		return 1;
	// A kind record_len() does not know (a staged kind added without its length) is counted
	// lost, not dropped unseen.
	__u32 len = record_len(((struct jl_header *)s->data)->kind);
	if (len)
		output(get_lost(), s->data, len, f->cpu);
	else
		count_lost(get_lost(), 1);
	return 0;
}

// The first record of this CPU's stage still held: a stage longer than JL_STAGE keeps its
// newest records.
static __always_inline __u64 stage_begin(struct jl_cpu *st)
{
	__u64 end = st->written;
	__u64 begin = st->start;
	return end - begin > JL_STAGE ? end - JL_STAGE : begin;
}

// Sends the stage, oldest record first. When it overflowed, its oldest records are gone: a
// loss when the oldest kept record lies after the due time (the late wakeup's own records
// went), else only older context went, which the explanation does not use.
//
// The records go out in a bpf_loop (Linux 5.17+), whose callback the verifier checks once: an
// open-coded loop of JL_STAGE turns is verified turn by turn, inlined into every program that
// flushes, which 6.1's verifier did not finish in minutes.
static __always_inline void flush_range(struct jl_cpu *st, __u32 cpu, __u64 begin, __u64 end)
{
	struct jl_lost *l = get_lost();
	if (end - begin > JL_STAGE) {
		__u64 over = end - begin - JL_STAGE;
		begin = end - JL_STAGE;
		__u32 key = cpu * JL_STAGE + (__u32)(begin & (JL_STAGE - 1));
		struct jl_slot *s = bpf_map_lookup_elem(&stage, &key);
		struct jl_header *h = s ? (void *)s->data : 0;
		if (!h || !(st->have & JL_HAVE_EXPIRY) || (__s64)h->ts > st->due) {
			count_lost(l, over);
			if (l)
				l->in_stage += over;
		}
	}
	if (end > begin) {
		struct jl_flush f = { .begin = begin, .end = end, .cpu = cpu };
		bpf_loop((__u32)(end - begin), flush_one, &f, 0);
	}
	// The next timer's arming went out with the stage if the stage still held it (an arming
	// an overflow wrote over is sent with its wakeup: send_armed, or the jl_cycle's copy).
	if ((st->have & JL_HAVE_NEXT) && st->next.slot >= begin)
		st->next.sent = 1;
}

static __always_inline void flush(struct jl_cpu *st, __u32 cpu)
{
	flush_range(st, cpu, st->start, st->written);
}

// Where the stage after a decision begins: at the CPU's first slot (the next multiple of
// JL_STAGE), so that every wakeup's records reuse the same few slots, hot in the cache. Slot
// numbers only grow: those skipped were never claimed. A program that interrupted this one
// and claimed a slot meanwhile keeps its place: the stage then begins where the counter is.
static __always_inline __u64 next_stage_start(struct jl_cpu *st)
{
	__u64 w = st->written;
	__u64 first = (w + JL_STAGE - 1) & ~(__u64)(JL_STAGE - 1);
	if (first == w || __sync_val_compare_and_swap(&st->written, w, first) != w)
		return st->written;
	return first;
}

// A followed thread gives up its CPU: the wakeup being decided (the last one of this CPU)
// costs one jl_cycle record when it was not later than the threshold; otherwise, or when
// this CPU's trace shows no complete wakeup (a preemption after one was decided, the first
// sleep), the stage goes out whole. Either way a new stage begins.
static __always_inline void decide(struct jl_cpu *st, struct jl_config *c, __u32 cpu, __u64 ts)
{
	__u64 need = JL_HAVE_EXPIRY | JL_HAVE_SWITCH;
	bool late = 1;
	if ((st->have & need) == need) {
		__s64 by = late_by(st, c, ts);
		late = by > 0 && (__u64)by >= c->explain_above_ns;
	}
	if (late) {
		// The arming of the wakeup being decided, unless it goes out in this stage: armed
		// after the thread's last decision (it did not give up its CPU between its arming
		// and the expiry: a sleep armed past its due time, whose interrupt came at once), it
		// is in the stage, and sent twice it was two armings of one timer in the trace.
		if ((st->have & JL_HAVE_EXPIRY) && !st->armed.sent &&
		    st->armed.slot < stage_begin(st))
			send_armed(st, cpu);
		flush(st, cpu);
	} else {
		send_cycle(st, cpu);
	}
	st->start = next_stage_start(st);
	st->have &= JL_HAVE_NEXT;
	st->pending_since = (st->have & JL_HAVE_NEXT) && !st->next.sent ? st->next.ts : 0;
}

// Makes room in this CPU's stage before a record is claimed: a stage about to wrap goes out
// now, rather than its newest records overwriting the oldest ones, when its decision is
// already known to send it: the wakeup being decided is late (its timer expired, and the time
// since its due time reaches the threshold), or the thread was preempted (no timer armed
// since the last decision: the next one sends the stage whole). The explanation of the late
// wakeup needs those oldest records (lab check 7, stop 60: under TCG, 16 vCPUs' wakeups 100 ms
// and more late staged over 1024 events each, and 3729 were lost; here a FIFO 99 spinner
// interrupted by signals, tests/measuring/trace_reduction.rs). The decision then sends the
// rest. Costs one comparison per staged record until a stage is that full.
//
// The last JL_STAGE_SPARE slots stay free for the programs that interrupt this one while it
// sends (they claim slots past those sent, which the sending reads no more). A program that
// interrupted another (filling > 1) never sends: the slot the other claimed may not be filled
// yet; at worst that stage wraps as before, counted lost.
#define JL_STAGE_SPARE 64

// A global function: the verifier checks it once, not at each of the calls every program
// that stages a record has (inlined, or a static subprogram, it made the object's load 2.5x
// slower). `st` is the caller's state, NULL never (checked for the verifier).
__noinline int stage_send_early(struct jl_cpu *st, __u32 cpu)
{
	if (!st)
		return 0;
	__u64 begin = st->start;
	__u64 end = st->written;
	// The wakeup's arming goes out first, as decide() sends it: user space reads each CPU's
	// records in time order (an expiry before its arming is an unknown timer's), so it cannot
	// wait for the decision.
	if ((st->have & JL_HAVE_EXPIRY) && !st->armed.sent) {
		if (st->armed.slot < (end - begin > JL_STAGE ? end - JL_STAGE : begin))
			send_armed(st, cpu);
		st->armed.sent = 1;
	}
	// The stage begins after what is sent: a nested program claims past `end`.
	st->start = end;
	flush_range(st, cpu, begin, end);
	// What this CPU still holds back: the next timer's arming if unsent, and the records
	// programs that interrupted the sending staged (they found pending_since set, so left it).
	__u64 pending = (st->have & JL_HAVE_NEXT) && !st->next.sent ? st->next.ts : 0;
	if (st->written != end) {
		__u32 key = cpu * JL_STAGE + (__u32)(end & (JL_STAGE - 1));
		struct jl_slot *s = bpf_map_lookup_elem(&stage, &key);
		if (s) {
			__u64 first = ((struct jl_header *)s->data)->ts;
			if (!pending || first < pending)
				pending = first;
		}
	}
	st->pending_since = pending;
	return 0;
}

static __always_inline void stage_make_room(struct jl_cpu *st, struct jl_config *c, __u32 cpu,
					    __u64 ts)
{
	if (st->written - st->start < JL_STAGE - JL_STAGE_SPARE || st->filling != 1)
		return;
	// No timer armed nor expired since the last decision (the thread was preempted, or has
	// not slept yet): the next decision finds no complete wakeup and sends the stage whole
	// (decide()), so it may go now. A timer armed and not expired: the wakeup may yet be on
	// time, and the stage dropped. Expired: late once the threshold has passed.
	if (!(st->have & (JL_HAVE_EXPIRY | JL_HAVE_NEXT))) {
		stage_send_early(st, cpu);
		return;
	}
	if (!(st->have & JL_HAVE_EXPIRY))
		return;
	__s64 by = late_by(st, c, ts);
	if (by > 0 && (__u64)by >= c->explain_above_ns)
		stage_send_early(st, cpu);
}

// ---- programs ----
//
// Floors of the cost, for bench/bpf-floor.sh only (never shipped): built with -DJL_FLOOR=1,
// every program returns at once (what the kernel's calls into this many programs cost); with
// -DJL_FLOOR=2, after one clock read (the one every program makes).
#ifndef JL_FLOOR
#define JL_FLOOR 0
#endif
#define FLOOR()                               \
	do {                                  \
		if (JL_FLOOR == 2)            \
			bpf_ktime_get_ns();   \
		if (JL_FLOOR)                 \
			return 0;             \
	} while (0)

SEC("tp_btf/hrtimer_start")
int BPF_PROG(hrtimer_start, struct hrtimer *timer)
{
	FLOOR();
	__u32 cpu = bpf_get_smp_processor_id();
	if (!cpu_traced(cpu))
		return 0;
	struct jl_config *c = get_config();
	__s32 tid = current_pid();
	bool filtering = c && c->filter_tids;
	if (filtering && !followed(tid))
		return 0;
	struct jl_cpu *st = get_cpu_state();
	__u64 ts = bpf_ktime_get_ns();
	__u64 slot = st ? st->written : 0;
	EMIT(struct jl_hrtimer_start, JL_HRTIMER_START, cpu, c, st, ts, 1, {
		r->hrtimer = (__u64)timer;
		r->expires = timer->node.expires;
		r->softexpires = timer->_softexpires;
	});
	// A lookup first: a thread re-arms the same timer on the same CPU every cycle, and an
	// LRU map's update takes its locks and a fresh element each time (it was most of this
	// program's 1.0-1.4 us in bpf-program-cost.sh).
	if (filtering && c->reduce) {
		__u64 key = (__u64)timer;
		__u32 *armed_on = bpf_map_lookup_elem(&timers, &key);
		if (!armed_on)
			bpf_map_update_elem(&timers, &key, &cpu, BPF_ANY);
		else if (*armed_on != cpu)
			*armed_on = cpu;
	}
	// The thread's last timer never expired here (moved to another CPU: an expiry here
	// would have taken it out of `next`) and its arming went with a stage reduced away (an
	// on-time wakeup's, before it): send it now, before this arming takes its place, so that
	// user space can join the expiry seen on the other CPU (22-31 % of CPU 1's late wakeups
	// in lab check 1b were unjoined without it). Its time is older than this CPU's
	// `pending_since` bound or equal to it (set from it when that stage was decided).
	if (st && filtering && c->reduce && (st->have & JL_HAVE_NEXT) && !st->next.sent &&
	    st->next.slot < stage_begin(st)) {
		struct jl_hrtimer_start *r = reserve_at(sizeof(*r), JL_HRTIMER_START, cpu,
							st->next.ts, st->next.pid);
		if (r) {
			r->hrtimer = st->next.hrtimer;
			r->expires = st->next.expires;
			r->softexpires = st->next.softexpires;
			bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
		}
	}
	if (st && filtering) {
		st->next.hrtimer = (__u64)timer;
		st->next.expires = timer->node.expires;
		st->next.softexpires = timer->_softexpires;
		st->next.ts = ts;
		st->next.pid = tid;
		st->next.sent = 0;
		st->next.slot = slot;
		st->next.ran_since = st->last_switch_in;
		st->have |= JL_HAVE_NEXT;
	}
	return 0;
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(hrtimer_expire_entry, struct hrtimer *timer, __s64 *now)
{
	FLOOR();
	__u32 cpu = bpf_get_smp_processor_id();
	if (!cpu_traced(cpu))
		return 0;
	struct jl_config *c = get_config();
	if (c && c->n_functions) {
		__u64 f = (__u64)timer->function;
		bool keep = 0;
		for (int i = 0; i < JL_MAX_FUNCTIONS; i++) {
			if (i < c->n_functions && c->functions[i] == f)
				keep = 1;
		}
		if (!keep)
			return 0;
	}
	struct jl_cpu *st = get_cpu_state();
	__u64 ts = bpf_ktime_get_ns();
	__s64 t = 0;
	bpf_probe_read_kernel(&t, sizeof(t), now);
	bool its_next = st && (st->have & JL_HAVE_NEXT) && st->next.hrtimer == (__u64)timer;
	// The thread's next timer expires while its last wakeup is still undecided: the thread
	// has not given up its CPU since that wakeup, because the timer it armed next was already
	// due (a wakeup late by nearly a whole number of periods leaves the next due time a few
	// microseconds ahead) and its interrupt came before the thread could sleep. The last
	// wakeup is decided here, before this expiry takes its place, as at a switch: `ts` is
	// after the thread's clock read of it (it armed this timer after that read), so the bound
	// still holds. Taking its place undecided lost its timer's arming when that had gone with
	// a stage reduced away: its sample had no timer in the trace (lab checks 1f and 8).
	if (its_next && (st->have & JL_HAVE_EXPIRY) && c && c->reduce)
		decide(st, c, cpu, ts);
	// A followed thread's timer armed on another CPU (moved here by timer migration): to the
	// ring buffer at once, not into this CPU's stage (see the top of this file).
	struct jl_cpu *staged = st;
	if (!its_next && st && c && c->reduce) {
		__u64 key = (__u64)timer;
		__u32 *armed_on = bpf_map_lookup_elem(&timers, &key);
		if (armed_on && *armed_on != cpu) {
			staged = 0;
			__sync_fetch_and_add(&st->seen, 1);
		}
	}
	EMIT(struct jl_hrtimer_expire, JL_HRTIMER_EXPIRE, cpu, c, staged, ts, 1, {
		r->hrtimer = (__u64)timer;
		r->now = t;
	});
	if (!st)
		return 0;
	__s64 offset = timer->base->offset;
	st->expiring = (__u64)timer;
	st->expiring_due = timer->_softexpires - offset;
	if (its_next) {
		st->armed = st->next;
		st->have = JL_HAVE_EXPIRY;
		st->expiry_ts = ts;
		st->now = t;
		st->expiry_pid = current_pid();
		st->due = st->armed.expires - offset;
	}
	return 0;
}

// Whether the callback of `timer` runs now on this CPU (we are inside it).
static __always_inline bool in_callback_of(__u64 timer)
{
	struct hrtimer *t = (void *)timer;
	if (!t || !bpf_core_field_exists(t->base->running))
		return 0;
	return (__u64)BPF_CORE_READ(t, base, running) == timer;
}

// The due time of a followed thread's wakeup at its sched_waking (`ts`), for the culprit's
// stack at its switch-in. It is never after the sample's own due time, so that no late sample
// misses its stack (an early one costs only a stack user space does not attach):
// - woken from the callback of a timer (the thread's own, one-shot or periodic): that timer's
//   soft expiry, the earliest it may fire;
// - woken by another followed thread (an IPC sender): the sender's own wakeup's due time,
//   which comes before its send (the IPC latency starts at the send);
// - else the wakeup itself (only the path from the waker's clock read to here is missed).
static __always_inline __s64 due_of_wakeup(struct jl_cpu *st, __u64 ts)
{
	__s64 due = ts;
	if (st && st->expiring && in_callback_of(st->expiring))
		return st->expiring_due < due ? st->expiring_due : due;
	__s32 waker = current_pid();
	__u64 *waker_due = followed_due(waker);
	if (waker_due && *waker_due && (__s64)*waker_due < due)
		due = *waker_due;
	return due;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(sched_waking, struct task_struct *p)
{
	FLOOR();
	__u32 cpu = bpf_get_smp_processor_id();
	if (!cpu_traced(cpu))
		return 0;
	struct jl_config *c = get_config();
	__s32 pid = p->pid;
	__u64 *due = followed_due(pid);
	// As the tracefs filter `pid == <followed> || prio < 100`.
	if (c && c->filter_tids && p->prio >= 100 && !due)
		return 0;
	struct jl_cpu *st = get_cpu_state();
	__u64 ts = bpf_ktime_get_ns();
	// The first wakeup since the thread last slept is the one its sample measures.
	if (due && !*due)
		*due = due_of_wakeup(st, ts);
	__s32 target = task_cpu(p);
	// A followed thread of another CPU woken here (from its timer moved here, see
	// hrtimer_expire_entry): to the ring buffer at once, not into this CPU's stage.
	struct jl_cpu *staged = st;
	if (due && target >= 0 && target != (__s32)cpu && st && c && c->reduce) {
		staged = 0;
		__sync_fetch_and_add(&st->seen, 1);
	}
	EMIT(struct jl_waking, JL_WAKING, cpu, c, staged, ts, 1, {
		read_task(&r->task, p);
		r->target_cpu = target;
		r->pad = 0;
	});
	if (st && (st->have & (JL_HAVE_EXPIRY | JL_HAVE_SWITCH)) == JL_HAVE_EXPIRY &&
	    p->pid == st->armed.pid) {
		st->have |= JL_HAVE_WAKING;
		st->waking_ts = ts;
		st->waking_pid = current_pid();
		st->target_cpu = target;
		read_task(&st->woken, p);
	}
	return 0;
}

// The kernel stack of the task giving up the CPU (the current task here), written when a
// measuring thread gets the CPU from it already later than the threshold.
static __always_inline void send_stack(void *ctx, __u32 cpu, __u64 ts, __s32 pid)
{
	struct jl_stack *r = reserve_at(sizeof(*r), JL_STACK, cpu, ts, pid);
	if (!r)
		return;
	long n = bpf_get_stack(ctx, r->ips, sizeof(r->ips), 0);
	r->frames = n > 0 ? (__u32)((__u64)n / 8) : 0;
	r->pad = 0;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	FLOOR();
	__u32 cpu = bpf_get_smp_processor_id();
	if (!cpu_traced(cpu))
		return 0;
	struct jl_config *c = get_config();
	struct jl_cpu *st = get_cpu_state();
	__u64 ts = bpf_ktime_get_ns();
	bool filtering = c && c->filter_tids;
	__s32 prev_pid = prev->pid, next_pid = next->pid;
	__u64 *prev_due = filtering ? followed_due(prev_pid) : 0;
	if (prev_due) {
		if (st && c->reduce)
			decide(st, c, cpu, ts);
		// Asleep (not preempted): its next wakeup is a new one.
		if (!preempt)
			*prev_due = 0;
	}
	EMIT(struct jl_switch, JL_SWITCH, cpu, c, st, ts, 1, {
		read_task(&r->prev, prev);
		read_task(&r->next, next);
	});
	__u64 *next_due = filtering ? followed_due(next_pid) : 0;
	if (!st || !next_due)
		return 0;
	// How late the thread is as it gets the CPU: from its timer's arming when this CPU
	// followed it (the reduction's bound), else from its wakeup's due time; -1: unknown.
	__s64 by = *next_due ? (__s64)ts - (__s64)*next_due : -1;
	if ((st->have & (JL_HAVE_EXPIRY | JL_HAVE_SWITCH)) == JL_HAVE_EXPIRY &&
	    next_pid == st->armed.pid) {
		st->have |= JL_HAVE_SWITCH;
		st->switch_ts = ts;
		read_task(&st->prev, prev);
		read_task(&st->next_task, next);
		by = late_by(st, c, ts);
	}
	if (prev_pid != 0 && c->explain_above_ns && by > 0 && (__u64)by >= c->explain_above_ns)
		send_stack(ctx, cpu, ts, prev_pid);
	st->last_switch_in = ts;
	return 0;
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(irq_handler_entry, int irq, struct irqaction *action)
{
	FLOOR();
	__u32 cpu = bpf_get_smp_processor_id();
	if (!cpu_traced(cpu))
		return 0;
	struct jl_config *c = get_config();
	struct jl_cpu *st = get_cpu_state();
	__u64 ts = bpf_ktime_get_ns();
	const char *name = action->name;
	EMIT(struct jl_irq, JL_IRQ_ENTRY, cpu, c, st, ts, 1, {
		r->irq = irq;
		r->pad = 0;
		if (bpf_probe_read_kernel_str(r->name, sizeof(r->name), name) < 0)
			r->name[0] = 0;
	});
	return 0;
}

static __always_inline int small(__u16 kind, __u32 value)
{
	FLOOR();
	__u32 cpu = bpf_get_smp_processor_id();
	if (!cpu_traced(cpu))
		return 0;
	struct jl_config *c = get_config();
	struct jl_cpu *st = get_cpu_state();
	__u64 ts = bpf_ktime_get_ns();
	EMIT(struct jl_small, kind, cpu, c, st, ts,
	     kind == JL_SOFTIRQ_ENTRY || kind == JL_VECTOR_ENTRY, {
		r->value = value;
		r->pad = 0;
	});
	return 0;
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(irq_handler_exit, int irq)
{
	return small(JL_IRQ_EXIT, (__u32)irq);
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(softirq_entry, unsigned int vec)
{
	return small(JL_SOFTIRQ_ENTRY, vec);
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(softirq_exit, unsigned int vec)
{
	return small(JL_SOFTIRQ_EXIT, vec);
}

SEC("tp_btf/nmi_handler")
int BPF_PROG(nmi_handler, void *handler, __s64 delta_ns)
{
	FLOOR();
	__u32 cpu = bpf_get_smp_processor_id();
	if (!cpu_traced(cpu))
		return 0;
	struct jl_config *c = get_config();
	struct jl_cpu *st = get_cpu_state();
	__u64 ts = bpf_ktime_get_ns();
	__u64 d = delta_ns > 0 ? (__u64)delta_ns : 0;
	EMIT(struct jl_count, JL_NMI, cpu, c, st, ts, 0, { r->count = d; });
	return 0;
}

// The architecture's interrupt vectors (x86's irq_vectors system): one program per entry and
// exit, the index in the record is the vector's place in VECTORS of src/trace/bpf/mod.rs.
// A kernel without one of them (another architecture, another configuration) is fine: the
// loader attaches those whose tracepoint exists.
#define VECTOR(index, name)                                          \
	SEC("tp_btf/" #name "_entry")                                \
	int BPF_PROG(v_##name##_entry) { return small(JL_VECTOR_ENTRY, index); } \
	SEC("tp_btf/" #name "_exit")                                 \
	int BPF_PROG(v_##name##_exit) { return small(JL_VECTOR_EXIT, index); }

VECTOR(0, call_function)
VECTOR(1, call_function_single)
VECTOR(2, deferred_error_apic)
VECTOR(3, error_apic)
VECTOR(4, irq_work)
VECTOR(5, local_timer)
VECTOR(6, reschedule)
VECTOR(7, spurious_apic)
VECTOR(8, thermal_apic)
VECTOR(9, threshold_apic)
VECTOR(10, x86_platform_ipi)

char LICENSE[] SEC("license") = "GPL";

/*
 * The lock protocol of dynalock_django.dynamodb, as a Promela model (README.md beside this file).
 *
 * One lock item, N clients (2 by default; 3 with -DN=3), an operator who may force-release, and a
 * database row fenced by tokens. Each step names, in a comment, the function of the package that
 * decides it (paths under dynalock_django/dynamodb/), so the model and the code can be read side by
 * side; tests/verification/test_replay.py replays spin's simulations through those functions.
 *
 * Time: every client has its own clock; one tick advances one client's clock. Over any interval, two
 * clocks' advances differ by at most DRIFT ticks (the drift bound; see `behind` below). Nothing else is
 * assumed of time: any number of steps of anyone may happen between two ticks, and any number of ticks
 * between two steps of a client (a pause, longer than a lease if it likes).
 *
 * Property (1) "never two clients that each believe by their own clock that their lease is valid,
 * within the drift bound": a client believes when it holds, nobody force-released it, and its lease
 * has more than MARGIN = DRIFT ticks left on its own clock (lease_record.LeaseRecord.remaining()).
 * Property (2): tokens grow at every grant, and the row accepts a fenced write only from a grant no
 * older than the one that wrote it last (fencing.fenced_save: token >= the row's).
 * Property (3), LTL p3 (pan -a -f): a lock released or abandoned while someone waits is granted again.
 */

#ifndef N
#define N 2
#endif
#define L 3                 /* lease duration, ticks (every holder's) */
#ifndef DRIFT
#define DRIFT 1             /* over any interval, two clocks' advances differ by at most DRIFT ticks */
#endif
#ifndef MARGIN
#define MARGIN DRIFT        /* a holder believes while more than MARGIN ticks of its lease are left */
#endif
#ifndef GRANTS
#define GRANTS 1            /* acquires each client starts */
#endif
#ifndef RENEWS
#define RENEWS 1            /* heartbeats per holding */
#endif
#ifndef LOSSES
#define LOSSES 1            /* answers lost, in all (each after its write landed, or was refused) */
#endif
#ifndef FORCES
#define FORCES 1            /* force-releases by the operator */
#endif

#define NOBODY 255

/* The lock item (wire/item.py's LockInfo): owner, record version number, fencing token, released flag;
 * the lease duration is L for everyone. Versions are UUIDs: here a counter that never repeats. */
bool exists;
byte owner = NOBODY;
byte rvn;
byte token;
bool released;
byte item_grant;            /* ghost: which grant wrote the item's holding (grants counted in order) */

/* The database row, fenced (fencing.fenced_save). */
byte row_token;
byte row_grant;             /* ghost: the grant whose write the row holds */

/* Ghosts of the whole run. */
byte wv[N + 1];             /* the version each client's write in flight stamps (and the operator's, [N]) */
byte cand;                  /* new_version's candidate */
byte grants;                /* grants so far */
byte last_token;            /* the greatest token ever issued: the wall-clock seed is assumed above it */
byte losses;
byte forces;
bool freed;                 /* the lock was released, or its holder died, and nobody holds it since */
byte waiting;               /* clients inside an acquire (they never give up in this model) */

/* Clocks: behind[i] = client 0's clock minus client i's, kept 0 <= behind[1] <= ... <= behind[N-1] <= DRIFT,
 * so any two clocks' readings differ by a number in a window DRIFT wide, and their advances over any
 * interval by at most DRIFT. (For two clients that is every such pair of clocks; for three, those that
 * keep one order.) The ticks each client counts are capped at L: no rule looks further. */
byte behind[N];
byte age[N];                /* holder: ticks since its lease started (LeaseRecord.valid_from) */
byte sent_age[N];           /* ticks since the write in flight started (writes.Stamp.started) */
bool in_flight[N];
byte pend_age[N];           /* ticks since the unanswered acquire write started (plan.UnansweredWrites) */
byte obs_age[N];            /* waiter: ticks since it first saw obs_rvn (observations.Observation.seen_at) */

/* Clients. */
#define IDLE 0
#define ACQUIRING 1
#define HOLDING 2
#define RELEASING 3
#define DEAD 4
byte st[N];
byte my_rvn[N];             /* the holder's confirmed version (LeaseRecord.versions[0]) */
byte pend_rvn[N];           /* a version of ours whose answer was lost (UnansweredWrites / add_unanswered_version) */
byte my_token[N];
byte my_grant[N];
bool forced[N];             /* an operator force-released this holding: it is fenced, not believed */
byte obs_rvn[N];            /* the version a waiter watches (0: none) */

/* REPLAY builds (spin's simulations for tests/verification/test_replay.py) also count each clock's ticks
 * and print each decision as "EV client WHAT args... clock"; pan never prints, and never sees clk. */
#ifdef REPLAY
byte clk[N + 1];
#define ev(fmt, ...) printf(fmt, __VA_ARGS__)
#else
#define ev(fmt, ...) skip
#endif

#define believes(i) (st[i] == HOLDING && !forced[i] && age[i] < L - MARGIN)

#if N == 2
#define BELIEVERS (believes(0) + believes(1))
#else
#define BELIEVERS (believes(0) + believes(1) + believes(2))
#endif

#define bump(x) if :: x < L -> x++ :: else fi

/* A new record version (wire/writes.new_version, a UUID): here the smallest number that nobody stores or
 * remembers, which is all a UUID is used for (equality), and keeps the numbers, so the states, few. */
#if N == 2
#define in_use(x) (x == rvn || x == my_rvn[0] || x == pend_rvn[0] || x == obs_rvn[0] || x == wv[0] \
                   || x == my_rvn[1] || x == pend_rvn[1] || x == obs_rvn[1] || x == wv[1])
#else
#define in_use(x) (x == rvn || x == my_rvn[0] || x == pend_rvn[0] || x == obs_rvn[0] || x == wv[0] \
                   || x == my_rvn[1] || x == pend_rvn[1] || x == obs_rvn[1] || x == wv[1] \
                   || x == my_rvn[2] || x == pend_rvn[2] || x == obs_rvn[2] || x == wv[2])
#endif
inline new_version(me) {
    cand = 1;
    do
    :: in_use(cand) -> cand++
    :: else -> break
    od;
    wv[me] = cand;
    cand = 0;
    ev("EV %d NEWV %d\n", me, wv[me])
}

/* Property (1), checked in every reachable state. */
active proctype mutual_exclusion() {
    atomic { (BELIEVERS > 1) -> assert(false) }
}

/* One tick of client i's clock, if the clocks stay within the drift bound. */
inline tick(i) {
    d_step {
        (i == 0 && behind[N - 1] < DRIFT) || (i > 0 && behind[i] > behind[i - 1]) ->
        if
        :: i == 0 -> j = 1; do :: j < N -> behind[j]++; j++ :: else -> break od
        :: else -> behind[i]--
        fi;
        /* only the ages that mean something now tick (the others stay 0: fewer states, same decisions) */
        if :: st[i] == HOLDING -> bump(age[i]) :: else fi;
        if :: in_flight[i] -> bump(sent_age[i]) :: else fi;
        if :: pend_rvn[i] != 0 -> bump(pend_age[i]) :: else fi;
        if :: obs_rvn[i] != 0 -> bump(obs_age[i]) :: else fi;
#ifdef REPLAY
        clk[i]++;
#endif
        j = 0
    }
}

active proctype clocks() {
    byte j;
end_ticking:
    do
    :: tick(0)
    :: tick(1)
#if N > 2
    :: tick(2)
#endif
    od
}

/* A grant lands (wire/writes.acquire's update: SET fencingToken = if_not_exists(fencingToken, :seed) + :one). */
inline grant(me) {
    owner = me;
    released = false;
#ifdef BUG_TOKEN_REUSED
    /* The token restarts from a constant once the item is gone (no wall-clock seed). */
    token = (exists -> token : 0) + 1;
#else
    /* The seed is the writer's wall clock in ms: assumed above every token issued before (guarantees.md). */
    token = (exists -> token : last_token) + 1;
#endif
    exists = true;
    assert(token > last_token);          /* property (2): tokens strictly increase across grants */
    last_token = token;
    grants++;
    item_grant = grants;
    freed = false
}

/* The client learns that a grant is its own: the lease counts from `started` (acquirer.Acquirer.grant). */
inline hold(me, started) {
    ev("EV %d GRANT %d %d %d\n", me, rvn, started, clk[me]);
    st[me] = HOLDING;
    waiting--;
    my_rvn[me] = rvn;
    my_token[me] = token;
    my_grant[me] = item_grant;
    forced[me] = false;
    pend_rvn[me] = 0;
    obs_rvn[me] = 0;
    age[me] = started;
    obs_age[me] = 0;
    pend_age[me] = 0;
    sent_age[me] = 0;
    in_flight[me] = false;
    renewals = 0
}

/* What a read, or a refused write's ALL_OLD, shows (plan.Acquisition.found, observations.Observations.saw). */
inline found(me) {
    pend_rvn[me] = 0;                    /* UnansweredWrites.keep_only: ours is not stored */
    pend_age[me] = 0;
    sent_age[me] = 0;
    in_flight[me] = false;
    if
    :: !exists || released -> free_next = true; obs_rvn[me] = 0; obs_age[me] = 0; ev("EV %d FREE %d\n", me, clk[me])
    :: else ->
        free_next = false;
        ev("EV %d SEEN %d %d\n", me, rvn, clk[me]);
        if
        :: rvn != obs_rvn[me] -> obs_rvn[me] = rvn; obs_age[me] = 0   /* a new version restarts the watch */
        :: else                                                       /* the same version: seen_at kept */
        fi
    fi
}

/* The database row (fencing.fenced_save's conditional UPDATE: token >= the row's). */
inline fenced_write(me) {
    atomic {
        if
        :: my_token[me] >= row_token ->
            assert(my_grant[me] >= row_grant);   /* property (2): no older grant's write after a newer one's */
            row_token = my_token[me];
            row_grant = my_grant[me]
        :: else                                  /* refused: the row saw a newer token */
        fi
    }
}

proctype client(byte me) {
    byte started_grants = 0;
    byte renewals;
    bool free_next;                      /* plan.Acquisition._write_next */
    bool take;                           /* the write's may_take_over */
    bool ok;
    bool revalidated;                    /* BUG_RENEW_AFTER_RELEASE: once per client */

idle:
    atomic {                             /* a client between acquires keeps nothing of the last one */
        st[me] = IDLE; age[me] = 0; sent_age[me] = 0; in_flight[me] = false; pend_rvn[me] = 0; pend_age[me] = 0;
        obs_rvn[me] = 0; obs_age[me] = 0; my_rvn[me] = 0; my_token[me] = 0; my_grant[me] = 0; forced[me] = false;
        renewals = 0; free_next = false; take = false; ok = false; wv[me] = 0
    }
end_idle:
    if
    :: started_grants < GRANTS ->
        atomic {
            started_grants++; st[me] = ACQUIRING; waiting++; free_next = true; obs_rvn[me] = 0;
            ev("EV %d START %d\n", me, clk[me])
        }
    fi;

acquiring:
    /* plan.Acquisition.next_step: write when the lock looked free, a write of ours may have landed, or the
     * watched version has stood a whole lease on our clock (observations.Observation.may_take_over); else read. */
    atomic {
        if
#ifdef CONTROL_NO_TAKEOVER
        :: free_next || pend_rvn[me] != 0 ->   /* the control of property (3): a waiter that never takes over */
#else
        :: free_next || pend_rvn[me] != 0 || (obs_rvn[me] != 0 && obs_age[me] >= L) ->
#endif
            /* The write's stamp is taken before sending (writes.Stamp.new): its lease counts from here. */
            take = (obs_rvn[me] != 0 && obs_age[me] >= L);
            sent_age[me] = 0;
            in_flight[me] = true;
            new_version(me);
            ev("EV %d WRITE %d %d %d\n", me, wv[me], take, clk[me])
        :: else ->
            /* A consistent read: plan.Acquisition.found. Its answer comes at once (waiters count from after it). */
            ev("EV %d READ %d\n", me, clk[me]);
            found(me)
        :: pend_rvn[me] != 0 ->
            /* After MAX_UNANSWERED lost answers plan.Acquisition.next_step reads instead (here after one:
             * both are open): the read shows whether ours landed (plan.UnansweredWrites.landed_in,
             * acquirer.Acquirer.attempt). */
            ev("EV %d RESOLVE %d\n", me, clk[me]);
            if
            :: pend_rvn[me] != 0 && exists && owner == me && rvn == pend_rvn[me] && !released ->
#ifdef BUG_LEASE_FROM_ANSWER
                hold(me, 0)              /* the lease counted from the answer that showed it ours */
#else
                hold(me, pend_age[me])   /* from when that write started */
#endif
            :: else -> found(me)
            fi
        fi
    }
    if
    :: st[me] == HOLDING -> goto holding
    :: st[me] != HOLDING && !in_flight[me] -> goto acquiring
    :: else
    fi;
    /* It lands (latency: any ticks, any other steps, before). Its condition is writes.acquire's. */
    atomic {
        ok = (!exists || released
#ifdef BUG_NO_VERSION_CONDITION
             || take                     /* takes over whoever holds now, renewed or not */
#else
             || (take && rvn == obs_rvn[me])
#endif
             || (pend_rvn[me] != 0 && owner == me && rvn == pend_rvn[me]));
        if
        :: ok -> rvn = wv[me]; grant(me)
        :: else
        fi;
        if
        :: losses < LOSSES ->            /* the answer is lost: botocore_errors.may_have_landed */
            losses++;
            pend_rvn[me] = wv[me];       /* plan.UnansweredWrites.add */
            ev("EV %d LOST %d %d\n", me, wv[me], clk[me]);
            pend_age[me] = sent_age[me];
            sent_age[me] = 0;
            in_flight[me] = false
        :: ok -> hold(me, sent_age[me])  /* acquirer.Acquirer._write: the lease counts from stamp.started */
        :: !ok -> found(me)              /* a refusal carries the item (ALL_OLD) */
        fi;
        wv[me] = 0; take = false; ok = false
    }
    if
    :: st[me] == HOLDING -> goto holding
    :: else -> goto acquiring
    fi;

holding:
end_holding:
    do
    :: renewals < RENEWS ->              /* heartbeat.Heartbeat / lease_writes.LeaseWriter.renew */
        atomic { renewals++; sent_age[me] = 0; in_flight[me] = true; new_version(me) }
        atomic {
            /* wire/conditions.still_held(renewal=True): our owner, one of our versions, not released */
            in_flight[me] = false;
            ok = (exists && owner == me && (rvn == my_rvn[me] || (pend_rvn[me] != 0 && rvn == pend_rvn[me]))
                 && !released);
            if
            :: ok -> rvn = wv[me]
            :: else
            fi;
            if
            :: losses < LOSSES ->        /* LeaseRecord.add_unanswered_version */
                losses++;
                pend_rvn[me] = wv[me]
            :: ok ->                     /* LeaseRecord.renewed: valid_from = the renewal's start */
                my_rvn[me] = wv[me]; pend_rvn[me] = 0; age[me] = sent_age[me]; pend_age[me] = 0;
                ev("EV %d RENEWED %d %d %d\n", me, wv[me], sent_age[me], clk[me])
            :: !ok ->                    /* refused, not ours (Stamp.landed_in): LockLost */
                st[me] = IDLE
            fi;
            sent_age[me] = 0; wv[me] = 0; ok = false
        }
        if
        :: st[me] == IDLE -> goto idle
        :: else
        fi
    :: atomic { age[me] >= L -> st[me] = IDLE }  /* heartbeat: safe time ran out (LeaseWriter.expire) */
       goto idle
#ifdef REPLAY
    :: ev("EV %d BELIEVES %d %d\n", me, age[me] < L - MARGIN, clk[me])
#endif
    ::  st[me] == HOLDING -> fenced_write(me)  /* whenever: a pause may separate the check and the write */
    :: atomic {                          /* the holder dies: its lock is abandoned */
           st[me] = DEAD;
           if
           :: exists && owner == me && !released && item_grant == my_grant[me] -> freed = true
           :: else
           fi;
           age[me] = 0; pend_rvn[me] = 0; pend_age[me] = 0; my_rvn[me] = 0; my_token[me] = 0; my_grant[me] = 0;
           forced[me] = false; renewals = 0; ok = false; wv[me] = 0
       }
       goto dead
    :: break                             /* release (lease_writes.LeaseWriter.release) */
    od;

    /* Its release starts: the lease is no longer relied on (guarantees.md). */
    atomic { st[me] = RELEASING; new_version(me) }
    atomic {
        /* wire/conditions.still_held (KeptAlive): our owner and one of our versions */
        if
        :: exists && owner == me && (rvn == my_rvn[me] || (pend_rvn[me] != 0 && rvn == pend_rvn[me])) ->
            if
            :: released = true;
#ifndef BUG_RENEW_AFTER_RELEASE
               rvn = wv[me]              /* a release stamps a new version too (writes.release) */
#endif
            :: exists = false            /* delete_on_release (and what TTL clean-up does later) */
            fi;
            freed = true
        :: else
        fi;
        pend_rvn[me] = 0; pend_age[me] = 0; wv[me] = 0
    }
#ifdef BUG_RENEW_AFTER_RELEASE
    /* A heartbeat queued before the release runs after it, as the AWS Java client's did before its PR #116:
     * no recheck of the lease (LeaseWriter.renew's ensure_held), no "not released" in its condition. */
    if
    :: !revalidated -> atomic {
           revalidated = true;
           new_version(me);
           if
           :: exists && owner == me && rvn == my_rvn[me] ->
               rvn = wv[me]; my_rvn[me] = wv[me]; age[me] = 0; st[me] = HOLDING; renewals = 0   /* revalidated */
           :: else
           fi;
           wv[me] = 0
       }
       if
       :: st[me] == HOLDING -> goto holding
       :: else
       fi
    :: true
    fi;
#endif
    goto idle;

dead:
end_dead:
    skip
}

/* An operator's force-release (acquiring/operator_actions.OperatorActions.force_release): of the holding
 * it read, conditioned on its owner and token, not released (wire/conditions.same_holding). */
active proctype operator() {
end_operator:
    do
    :: atomic {
           forces < FORCES && exists && !released ->
           /* The read and the write in one step: its condition names the holding read (owner, token), which
            * only a grant or a release changes, so a write after a change would do nothing. */
           forces++;
           if
           :: released = true; new_version(N); rvn = wv[N]; wv[N] = 0
           :: exists = false             /* or deleted: its token must not come back (BUG_TOKEN_REUSED) */
           fi;
           if
           :: st[owner] == HOLDING && my_grant[owner] == item_grant -> forced[owner] = true
           :: else
           fi;
           freed = true
       }
    od
}

init {
    atomic {
        byte i = 0;
        do
        :: i < N -> run client(i); i++
        :: else -> break
        od
    }
}

/* Property (3): a lock freed while a client waits is granted again (pan -a -f -N p3). */
ltl p3 { [] ((freed && waiting > 0) -> <> !freed) }

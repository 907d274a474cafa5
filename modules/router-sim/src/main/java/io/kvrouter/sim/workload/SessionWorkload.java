package io.kvrouter.sim.workload;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Sessions of several turns, each turn's prompt being the session's whole history (shared prefix, every earlier
 * prompt and output) plus a new user segment. Sessions start as a Poisson process and are closed loops: a turn
 * arrives a think time (exponential) after the previous one finished. Every session opens with one of a few shared
 * prefixes (a system prompt, a tool preamble), chosen round-robin.
 *
 * <p>Two presets: {@link #multiTurn} (chat: 1k-token system prompts, several turns of a few hundred tokens, so the
 * history dominates the shared prefix) and {@link #agent} (long tool preambles, many short turns).
 *
 * <p>Each session draws from its own generator (seeded from the workload seed and the session number), so what a
 * session sends does not depend on the order in which sessions finish under one policy or another.
 */
public final class SessionWorkload implements Workload {
  /** The workload's shape; token counts are drawn uniformly from [min, max]. */
  public record Params(String name, int sessions, int sharedPrefixes, int sharedPrefixTokens, int minTurns,
      int maxTurns, int minUserTokens, int maxUserTokens, int minOutputTokens, int maxOutputTokens,
      double sessionsPerSecond, double meanThinkSeconds, long seed) {

    public Params {
      if (sessions <= 0 || sharedPrefixes <= 0 || sharedPrefixTokens < 0 || minTurns <= 0 || maxTurns < minTurns
          || minUserTokens <= 0 || maxUserTokens < minUserTokens || minOutputTokens <= 0
          || maxOutputTokens < minOutputTokens || !(sessionsPerSecond > 0) || !(meanThinkSeconds >= 0)) {
        throw new IllegalArgumentException("invalid session workload parameters " + this);
      }
    }
  }

  /** Chat: 8 system prompts of 1,000 tokens, 6–14 turns of 200–600 user and 200–600 output tokens, 30 s think. */
  public static Params multiTurn(int sessions, double sessionsPerSecond, long seed) {
    return new Params("multi-turn", sessions, 8, 1_000, 6, 14, 200, 600, 200, 600, sessionsPerSecond, 30.0, seed);
  }

  /** Agent: 4 tool preambles of 6,000 tokens, 8–20 turns of 50–300 tool-result and 20–120 output tokens, 1 s. */
  public static Params agent(int sessions, double sessionsPerSecond, long seed) {
    return new Params("agent", sessions, 4, 6_000, 8, 20, 50, 300, 20, 120, sessionsPerSecond, 1.0, seed);
  }

  private static final class Session {
    final int number;
    final SplittableRandom random;
    final int turns;
    int[] history;
    int turn;

    Session(int number, SplittableRandom random, int turns, int[] history) {
      this.number = number;
      this.random = random;
      this.turns = turns;
      this.history = history;
    }
  }

  private final Params params;
  private final Map<String, Session> sessions = new HashMap<>();
  private final int[][] prefixes;

  public SessionWorkload(Params params) {
    this.params = params;
    this.prefixes = new int[params.sharedPrefixes()][];
    for (int p = 0; p < prefixes.length; p++) {
      prefixes[p] = Tokens.generate(Tokens.key(params.seed(), 0x5EED, p), params.sharedPrefixTokens());
    }
  }

  @Override
  public String description() {
    Params p = params;
    return String.format(java.util.Locale.ROOT,
        "%s: %d sessions starting at %.2f/s (Poisson), %d shared prefixes of %d tokens, %d-%d turns, "
            + "%d-%d new prompt tokens and %d-%d output tokens per turn, think time %.1f s (exponential), seed %d",
        p.name(), p.sessions(), p.sessionsPerSecond(), p.sharedPrefixes(), p.sharedPrefixTokens(), p.minTurns(),
        p.maxTurns(), p.minUserTokens(), p.maxUserTokens(), p.minOutputTokens(), p.maxOutputTokens(),
        p.meanThinkSeconds(), p.seed());
  }

  @Override
  public void start(Arrivals arrivals) {
    SplittableRandom starts = new SplittableRandom(Tokens.key(params.seed(), 0x57A7));
    double t = 0;
    for (int s = 0; s < params.sessions(); s++) {
      t += exponential(starts, 1.0 / params.sessionsPerSecond());
      SplittableRandom random = new SplittableRandom(Tokens.key(params.seed(), s));
      int turns = between(random, params.minTurns(), params.maxTurns());
      Session session = new Session(s, random, turns, prefixes[s % prefixes.length]);
      sessions.put(sessionId(s), session);
      arrivals.at(seconds(t), nextTurn(session));
    }
  }

  @Override
  public void finished(WorkloadRequest request, long nowMicros, Arrivals arrivals) {
    Session session = sessions.get(request.session());
    session.history = request.tokens();
    if (session.turn >= session.turns) {
      sessions.remove(request.session());
      return;
    }
    long think = seconds(exponential(session.random, params.meanThinkSeconds()));
    arrivals.at(nowMicros + think, nextTurn(session));
  }

  private WorkloadRequest nextTurn(Session session) {
    int turn = ++session.turn;
    SplittableRandom r = session.random;
    int[] user = Tokens.generate(Tokens.key(params.seed(), session.number, turn, 1),
        between(r, params.minUserTokens(), params.maxUserTokens()));
    int[] output = Tokens.generate(Tokens.key(params.seed(), session.number, turn, 2),
        between(r, params.minOutputTokens(), params.maxOutputTokens()));
    int[] prompt = Tokens.concat(session.history, user);
    return new WorkloadRequest(sessionId(session.number) + "-t" + turn, sessionId(session.number),
        Tokens.concat(prompt, output), prompt.length);
  }

  /**
   * One turn of a session as a multi-turn Mooncake-format trace line (aiperf's mooncake_trace loader): the first
   * turn of a session at its start time ({@code timestamp}, ms), every later one a think time after the previous
   * turn finished ({@code delay}, ms); {@code inputLength} is what the turn adds (the shared prefix and the first user
   * segment, then each new user segment), the history being the replaying client's to carry; {@code hashIds} name
   * its blocks of {@code blockTokens} tokens, the shared prefix's ids shared by every session that opens with it.
   */
  public record TraceTurn(String sessionId, Long timestampMillis, Long delayMillis, int inputLength,
      int outputLength, long[] hashIds) {}

  /**
   * The workload as a multi-turn trace: the same sessions, start times, turn counts, segment lengths and think times
   * as {@link #start} and {@link #finished} draw (the same generators in the same order), one line per turn, sessions
   * in start order. {@code blockTokens} should divide the shared prefix's length so its blocks hold only its tokens.
   */
  public List<TraceTurn> toTrace(int blockTokens) {
    if (blockTokens <= 0) {
      throw new IllegalArgumentException("blockTokens must be positive");
    }
    List<TraceTurn> lines = new ArrayList<>();
    SplittableRandom starts = new SplittableRandom(Tokens.key(params.seed(), 0x57A7));
    int prefixBlocks = Math.floorDiv(params.sharedPrefixTokens(), blockTokens);
    long uniqueIds = (long) params.sharedPrefixes() * (prefixBlocks + 1);
    double t = 0;
    for (int s = 0; s < params.sessions(); s++) {
      t += exponential(starts, 1.0 / params.sessionsPerSecond());
      SplittableRandom random = new SplittableRandom(Tokens.key(params.seed(), s));
      int turns = between(random, params.minTurns(), params.maxTurns());
      long prefixBase = (long) (s % params.sharedPrefixes()) * (prefixBlocks + 1);
      for (int turn = 1; turn <= turns; turn++) {
        // finished() draws the think time before nextTurn() draws the segments
        Long delay = turn == 1 ? null : Math.round(exponential(random, params.meanThinkSeconds()) * 1000);
        int user = between(random, params.minUserTokens(), params.maxUserTokens());
        int output = between(random, params.minOutputTokens(), params.maxOutputTokens());
        int input = turn == 1 ? params.sharedPrefixTokens() + user : user;
        int shared = turn == 1 ? prefixBlocks : 0;
        int blocks = (input + blockTokens - 1) / blockTokens;
        long[] ids = new long[blocks];
        for (int b = 0; b < blocks; b++) {
          ids[b] = b < shared ? prefixBase + b : uniqueIds++;
        }
        lines.add(new TraceTurn(sessionId(s), turn == 1 ? Math.round(t * 1000) : null, delay, input, output, ids));
      }
    }
    return lines;
  }

  /** Writes {@link #toTrace} lines as JSONL ({@code session_id}, {@code timestamp} or {@code delay}, ...). */
  public static void writeTrace(List<TraceTurn> lines, java.io.Writer out) throws java.io.IOException {
    for (TraceTurn line : lines) {
      out.write("{\"session_id\": \"" + line.sessionId() + "\"");
      if (line.timestampMillis() != null) {
        out.write(", \"timestamp\": " + line.timestampMillis());
      }
      if (line.delayMillis() != null) {
        out.write(", \"delay\": " + line.delayMillis());
      }
      out.write(", \"input_length\": " + line.inputLength() + ", \"output_length\": " + line.outputLength()
          + ", \"hash_ids\": [");
      for (int i = 0; i < line.hashIds().length; i++) {
        out.write((i == 0 ? "" : ", ") + line.hashIds()[i]);
      }
      out.write("]}\n");
    }
  }

  private String sessionId(int number) {
    return params.name() + "-s" + number;
  }

  private static int between(SplittableRandom random, int min, int max) {
    return min + random.nextInt(max - min + 1);
  }

  private static double exponential(SplittableRandom random, double mean) {
    return mean == 0 ? 0 : -mean * Math.log(1 - random.nextDouble());
  }

  static long seconds(double seconds) {
    return Math.round(seconds * 1e6);
  }
}

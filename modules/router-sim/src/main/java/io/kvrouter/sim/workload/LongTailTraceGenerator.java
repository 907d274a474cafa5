package io.kvrouter.sim.workload;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Generates a Mooncake-format trace whose shared prefixes are spread thinner than the sample's
 * ({@link MooncakeSampleGenerator}): a long tail of documents, long one-off prompts and bursty arrivals, so no
 * fleet of bounded caches holds everything worth reusing and prefix-greedy stays below the ideal. A request is one of:
 * <ul>
 *   <li>a question on a shared document (50 %): one of 600 documents of 4–40 blocks (2k–20k tokens), picked with a
 *       Zipf(0.8) popularity (the sample: 40 documents, Zipf(1.1)), followed by 1–6 blocks of its own;</li>
 *   <li>a long one-off prompt (25 %) of 8–48 blocks nobody else shares;</li>
 *   <li>a turn of a chat session (25 %): the session's previous prompt ids plus 1–4 new blocks, the next turn 5–60 s
 *       later, up to 8 turns.</li>
 * </ul>
 * Arrivals switch between a calm and a burst state (a two-state Markov-modulated Poisson process): calm periods of
 * 20 s on average at the base rate, bursts of 4 s on average at {@value #BURST_FACTOR} times it, so the mean rate is
 * about 1.8 times the base rate. The last block of every prompt is partial (1–512 tokens); outputs are 32–600 tokens.
 */
public final class LongTailTraceGenerator {
  static final int DOCUMENTS = 600;
  static final double ZIPF = 0.8;
  static final double BURST_FACTOR = 6.0;
  static final double CALM_SECONDS = 20.0;
  static final double BURST_SECONDS = 4.0;

  private final TraceDraws draws;
  private final long[][] documents;
  private final double[] popularity;

  public LongTailTraceGenerator(long seed) {
    this.draws = new TraceDraws(seed);
    this.documents = draws.documents(DOCUMENTS, 4, 40);
    this.popularity = TraceDraws.zipf(DOCUMENTS, ZIPF);
  }

  /** {@code requests} entries, the calm state arriving at {@code baseRate} per second, sorted by timestamp. */
  public List<MooncakeTrace.Entry> generate(int requests, double baseRate) {
    if (requests < 0 || !(baseRate > 0)) {
      throw new IllegalArgumentException("want requests >= 0 and a positive rate, got " + requests + ", " + baseRate);
    }
    List<MooncakeTrace.Entry> entries = new ArrayList<>();
    double t = 0;
    boolean burst = false;
    double stateEnds = exponential(CALM_SECONDS);
    while (entries.size() < requests) {
      double rate = burst ? baseRate * BURST_FACTOR : baseRate;
      double next = t + exponential(1 / rate);
      if (next > stateEnds) {
        // memoryless: the next arrival is drawn afresh at the new state's rate from the switch
        t = stateEnds;
        burst = !burst;
        stateEnds = t + exponential(burst ? BURST_SECONDS : CALM_SECONDS);
        continue;
      }
      t = next;
      double kind = draws.random.nextDouble();
      if (kind < 0.5) {
        long[] document = documents[draws.pick(popularity)];
        entries.add(draws.entry(t, TraceDraws.concat(document, draws.freshIds(1 + draws.random.nextInt(6)))));
      } else if (kind < 0.75) {
        entries.add(draws.entry(t, draws.freshIds(8 + draws.random.nextInt(41))));
      } else {
        draws.session(entries, t, requests);
      }
    }
    entries.sort(Comparator.comparingLong(MooncakeTrace.Entry::timestampMillis));
    return entries;
  }

  private double exponential(double mean) {
    return -mean * Math.log(1 - draws.random.nextDouble());
  }
}

package io.kvrouter.core.load;

/**
 * Booking-driven load of one rank, immutable so a reader never sees one rank's figures torn. {@code seq} orders
 * records: a cell applies a record only if its sequence number is newer.
 */
public record RankLoad(long seq, int inFlight, long prefillTokens, long decodeBlocks) {
  public static final RankLoad IDLE = new RankLoad(0, 0, 0, 0);

  public RankLoad plus(long nextSeq, int requests, long prefill, long decode) {
    return new RankLoad(nextSeq, inFlight + requests, prefillTokens + prefill, decodeBlocks + decode);
  }
}

package io.kvrouter.core.indexer;

/**
 * A rank's cached prefix of a request, in blocks: {@code device} leading blocks on the device, then
 * {@code hostBeyondDevice} further blocks available from host memory (or faster), then {@code diskBeyondDevice}
 * further blocks available from disk (or faster). The lower tiers count only blocks past the device prefix, so the
 * three never double-count a block and their sum is how far the rank's cache reaches into the request.
 */
public record TieredOverlap(int device, int hostBeyondDevice, int diskBeyondDevice) {
  public static final TieredOverlap NONE = new TieredOverlap(0, 0, 0);

  public int total() {
    return device + hostBeyondDevice + diskBeyondDevice;
  }
}

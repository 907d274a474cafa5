package io.kvrouter.core.selection;

import io.kvrouter.core.error.RoutingError;

/** Validation of a routing request's shape, before it reaches any state. */
public record RequestLimits(int maxTokens) {
  public static final int DEFAULT_MAX_TOKENS = 131_072;

  /** Rejects a malformed request with INVALID_ARGUMENT; {@code forBook} also requires a request id. */
  public void validate(SelectionRequest request, boolean forBook) {
    requireModel(request.model());
    if (forBook && (request.requestId() == null || request.requestId().isBlank())) {
      throw RoutingError.invalid(RoutingError.EMPTY_REQUEST_ID, "request_id is required for Book").toException();
    }
    if (request.islTokens() <= 0) {
      throw RoutingError.invalid(RoutingError.INVALID_SIZE,
          "the prompt is empty: send token_ids, or block_hashes with isl_tokens > 0").toException();
    }
    if (request.islTokens() > maxTokens) {
      throw RoutingError.invalid(RoutingError.TOO_MANY_TOKENS,
          "prompt of " + request.islTokens() + " tokens exceeds the limit of " + maxTokens).toException();
    }
    if (request.expectedOutputTokens() < 0) {
      throw RoutingError.invalid(RoutingError.INVALID_SIZE, "expected_output_tokens must not be negative")
          .toException();
    }
    if (request.pinnedDpRank() != null && request.pinnedDpRank() < 0) {
      throw RoutingError.invalid(RoutingError.INVALID_SIZE, "pinned_dp_rank must not be negative").toException();
    }
    checkOverride("temperature", request.temperature());
    checkOverride("overlap_credit", request.overlapCredit());
    checkOverride("prefill_load_scale", request.prefillLoadScale());
  }

  /** Rejects an empty model name with INVALID_ARGUMENT / EMPTY_MODEL: every call that names a model checks it. */
  public static void requireModel(String model) {
    if (model == null || model.isBlank()) {
      throw RoutingError.emptyModel().toException();
    }
  }

  private static void checkOverride(String name, Double value) {
    if (value != null && !(value >= 0 && !value.isInfinite())) {
      throw RoutingError.invalid(RoutingError.MALFORMED, name + " override must be a finite number >= 0, got " + value)
          .toException();
    }
  }
}

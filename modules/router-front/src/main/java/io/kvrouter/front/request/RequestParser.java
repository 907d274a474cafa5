package io.kvrouter.front.request;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.json.JsonMapper;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.model.SessionMode;
import io.kvrouter.core.selection.RequestLimits;
import io.kvrouter.front.FrontError;
import java.io.IOException;
import java.util.Locale;
import java.util.Map;

/**
 * An OpenAI request body and its headers to a {@link ClientRequest}, or a 400 naming what is wrong. The body is read
 * by Jackson with bounds (nesting depth, string length, number length): deep, huge or malformed JSON and invalid UTF-8
 * are refused before anything else happens. Only what routing needs is checked here ({@code model}, {@code stream},
 * the prompt's shape when tokenizing); everything else is the engine's to validate.
 */
public final class RequestParser {
  /** The mapper's reader for an untyped body, built once (a request does not look its deserializer up). */
  private final ObjectReader json;
  private final int maxClientIdLength;

  public RequestParser(int maxJsonDepth, long maxBodyBytes, int maxClientIdLength) {
    JsonFactory factory = JsonFactory.builder()
        .streamReadConstraints(StreamReadConstraints.builder()
            .maxNestingDepth(maxJsonDepth)
            .maxStringLength((int) Math.min(Integer.MAX_VALUE, maxBodyBytes))
            .maxNumberLength(64)
            .build())
        .disable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
        .build();
    ObjectMapper mapper = JsonMapper.builder(factory)
        .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
        .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
        .build();
    this.json = mapper.readerFor(Object.class);
    this.maxClientIdLength = maxClientIdLength;
  }

  /** Parses {@code body} (the request's bytes, UTF-8) sent to {@code endpoint}. */
  public ClientRequest parse(Endpoint endpoint, byte[] body, RequestHeaders headers) {
    Map<String, Object> parsed = parseBody(body);
    Object model = parsed.get("model");
    if (model == null) {
      throw FrontError.badRequest(FrontError.MISSING_MODEL, "the body has no 'model'", "model").toException();
    }
    if (!(model instanceof String name) || name.isBlank()) {
      throw FrontError.badRequest(FrontError.INVALID_BODY, "'model' must be a non-empty string", "model")
          .toException();
    }
    if (name.length() > RequestLimits.MAX_ID_LENGTH) {
      throw FrontError.badRequest(RoutingError.FIELD_TOO_LONG, "'model' of " + name.length()
          + " characters exceeds the limit of " + RequestLimits.MAX_ID_LENGTH, "model").toException();
    }
    Object stream = parsed.get("stream");
    if (stream != null && !(stream instanceof Boolean)) {
      throw FrontError.badRequest(FrontError.INVALID_BODY, "'stream' must be a boolean", "stream").toException();
    }
    requireShape(endpoint, parsed);
    return new ClientRequest(endpoint, name, Boolean.TRUE.equals(stream), parsed,
        clientId(headers, FrontHeaders.REQUEST_ID), session(headers), priority(headers),
        global(headers), "true".equalsIgnoreCase(trim(headers.get(FrontHeaders.EXPLAIN_REQUEST))),
        integerHeader(headers, FrontHeaders.STRICT_PRIORITY), policyClass(headers), sessionMode(headers),
        listHeader(headers, FrontHeaders.REQUIRED_TAINTS), listHeader(headers, FrontHeaders.PREFERRED_TAINTS),
        multiplier(headers), "", null);
  }

  /**
   * A comma-separated header as its items, each stripped (empty: none); the items are checked where the request is
   * validated (router-core's Taints: a malformed taint is 400 INVALID_TAINT).
   */
  private static java.util.List<String> listHeader(RequestHeaders headers, String name) {
    String value = trim(headers.get(name));
    if (value == null || value.isEmpty()) {
      return java.util.List.of();
    }
    java.util.List<String> items = new java.util.ArrayList<>();
    for (String item : value.split(",", -1)) {
      items.add(item.strip());
    }
    return items;
  }

  private static Double multiplier(RequestHeaders headers) {
    String value = trim(headers.get(FrontHeaders.PREFERRED_TAINT_MULTIPLIER));
    if (value == null || value.isEmpty()) {
      return null;
    }
    try {
      return Double.valueOf(value);
    } catch (NumberFormatException e) {
      throw FrontError.badRequest(FrontError.INVALID_HEADER, FrontHeaders.PREFERRED_TAINT_MULTIPLIER
          + " must be a number in [0, 1], got '" + RoutingError.echo(value) + "'").toException();
    }
  }

  /** The first session header set ({@link FrontHeaders#SESSIONS}), or null. */
  private String session(RequestHeaders headers) {
    for (String name : FrontHeaders.SESSIONS) {
      String value = clientId(headers, name);
      if (value != null) {
        return value;
      }
    }
    return null;
  }

  private static SessionMode sessionMode(RequestHeaders headers) {
    String value = trim(headers.get(FrontHeaders.SESSION_MODE));
    SessionMode mode = SessionMode.fromWireName(value == null ? "" : value);
    if (mode == null) {
      throw FrontError.badRequest(FrontError.INVALID_HEADER, FrontHeaders.SESSION_MODE + " must be soft or hard, got '"
          + RoutingError.echo(value) + "'").toException();
    }
    return mode;
  }

  @SuppressWarnings("unchecked")
  private Map<String, Object> parseBody(byte[] body) {
    Object value;
    try {
      value = json.readValue(body);
    } catch (JsonProcessingException e) {
      throw FrontError.badRequest(FrontError.MALFORMED_JSON, "the body is not valid JSON: "
          + RoutingError.truncate(e.getOriginalMessage(), 200)).toException();
    } catch (IOException e) {
      throw FrontError.badRequest(FrontError.MALFORMED_JSON, "the body could not be read: "
          + RoutingError.truncate(e.getMessage(), 200)).toException();
    }
    if (!(value instanceof Map<?, ?> map)) {
      throw FrontError.badRequest(FrontError.INVALID_BODY, "the body must be a JSON object").toException();
    }
    return (Map<String, Object>) map;
  }

  /** The prompt's container has the type routing reads; its contents are checked when tokenized. */
  private static void requireShape(Endpoint endpoint, Map<String, Object> body) {
    if (endpoint == Endpoint.CHAT_COMPLETIONS) {
      Object messages = body.get("messages");
      if (!(messages instanceof java.util.List<?> list) || list.isEmpty()) {
        throw FrontError.badRequest(FrontError.INVALID_BODY, "'messages' must be a non-empty list", "messages")
            .toException();
      }
      for (Object message : list) {
        if (!(message instanceof Map<?, ?>)) {
          throw FrontError.badRequest(FrontError.INVALID_BODY, "every message must be an object", "messages")
              .toException();
        }
      }
    } else {
      Object prompt = body.get("prompt");
      if (!(prompt instanceof String) && !(prompt instanceof java.util.List<?>)) {
        throw FrontError.badRequest(FrontError.INVALID_BODY, "'prompt' must be a string, a list of strings, a list "
            + "of token ids or a list of such lists", "prompt").toException();
      }
    }
  }

  private String clientId(RequestHeaders headers, String name) {
    String value = trim(headers.get(name));
    if (value == null || value.isEmpty()) {
      return null;
    }
    if (value.length() > maxClientIdLength) {
      throw FrontError.badRequest(FrontError.INVALID_HEADER, name + " of " + value.length()
          + " characters exceeds the limit of " + maxClientIdLength).toException();
    }
    return value;
  }

  private static int priority(RequestHeaders headers) {
    return integerHeader(headers, FrontHeaders.PRIORITY);
  }

  /** The admission queue class header as sent (its length is checked with the request's other limits). */
  private static String policyClass(RequestHeaders headers) {
    String value = trim(headers.get(FrontHeaders.POLICY_CLASS));
    return value == null ? "" : value;
  }

  private static int integerHeader(RequestHeaders headers, String name) {
    String value = trim(headers.get(name));
    if (value == null || value.isEmpty()) {
      return 0;
    }
    try {
      return Integer.parseInt(value);
    } catch (NumberFormatException e) {
      throw FrontError.badRequest(FrontError.INVALID_HEADER, name
          + " must be an integer, got '" + RoutingError.echo(value) + "'").toException();
    }
  }

  private static boolean global(RequestHeaders headers) {
    String value = trim(headers.get(FrontHeaders.SCOPE));
    if (value == null || value.isEmpty() || value.equalsIgnoreCase("region")) {
      return false;
    }
    if (value.equalsIgnoreCase("global")) {
      return true;
    }
    throw FrontError.badRequest(FrontError.INVALID_HEADER, FrontHeaders.SCOPE + " must be 'region' or 'global', got '"
        + RoutingError.echo(value.toLowerCase(Locale.ROOT)) + "'").toException();
  }

  private static String trim(String value) {
    return value == null ? null : value.strip();
  }
}

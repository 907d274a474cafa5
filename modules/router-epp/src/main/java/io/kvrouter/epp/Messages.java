package io.kvrouter.epp;

import com.google.protobuf.ByteString;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.core.v3.HeaderValueOption;
import io.envoyproxy.envoy.service.ext_proc.v3.BodyMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.BodyResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.CommonResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.HeaderMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.HeadersResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ImmediateResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.StreamedBodyResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.TrailersResponse;
import io.envoyproxy.envoy.type.v3.HttpStatus;
import io.envoyproxy.envoy.type.v3.StatusCode;
import io.kvrouter.front.FrontError;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The ext_proc messages the picker reads and writes. */
final class Messages {
  /**
   * The largest body chunk the picker streams back: "Certain envoy implementations set a max limit of 64Kb per
   * streamed chunk" (llm-d, pkg/common/envoy/chunking.go), which answers with the same 62,000 bytes.
   */
  static final int MAX_CHUNK_BYTES = 62_000;

  private Messages() {}

  /** A header map as a lookup: lower-case name → first value ({@code raw_value} as Envoy sends it, else value). */
  static Map<String, String> headers(HeaderMap map) {
    Map<String, String> out = new LinkedHashMap<>();
    for (HeaderValue header : map.getHeadersList()) {
      String value = header.getRawValue().isEmpty() ? header.getValue() : header.getRawValue().toStringUtf8();
      out.putIfAbsent(header.getKey().toLowerCase(Locale.ROOT), value);
    }
    return out;
  }

  static HeaderValueOption set(String name, String value) {
    return HeaderValueOption.newBuilder()
        .setHeader(HeaderValue.newBuilder().setKey(name).setRawValue(ByteString.copyFromUtf8(value)))
        .setAppendAction(HeaderValueOption.HeaderAppendAction.OVERWRITE_IF_EXISTS_OR_ADD)
        .build();
  }

  /** The control headers present in {@code headers}, to remove before the request goes on. */
  static List<String> controlHeaders(Map<String, String> headers) {
    List<String> out = new ArrayList<>();
    for (String name : headers.keySet()) {
      if (EppHeaders.isControlHeader(name)) {
        out.add(name);
      }
    }
    return out;
  }

  /** {@code {"envoy.lb": {"x-gateway-destination-endpoint": destination}}}. */
  static Struct destinationMetadata(String destination) {
    return Struct.newBuilder().putFields(EppHeaders.LB_NAMESPACE, Value.newBuilder().setStructValue(
        Struct.newBuilder().putFields(EppHeaders.DESTINATION, Value.newBuilder().setStringValue(destination).build()))
        .build()).build();
  }

  static ProcessingResponse requestHeaders(CommonResponse common) {
    return ProcessingResponse.newBuilder().setRequestHeaders(HeadersResponse.newBuilder().setResponse(common))
        .build();
  }

  static ProcessingResponse responseHeaders(CommonResponse common) {
    return ProcessingResponse.newBuilder().setResponseHeaders(HeadersResponse.newBuilder().setResponse(common))
        .build();
  }

  static ProcessingResponse requestBody(CommonResponse common) {
    return ProcessingResponse.newBuilder().setRequestBody(BodyResponse.newBuilder().setResponse(common)).build();
  }

  static ProcessingResponse responseBody(CommonResponse common) {
    return ProcessingResponse.newBuilder().setResponseBody(BodyResponse.newBuilder().setResponse(common)).build();
  }

  static CommonResponse streamed(ByteString chunk, boolean endOfStream) {
    return CommonResponse.newBuilder().setBodyMutation(BodyMutation.newBuilder().setStreamedResponse(
        StreamedBodyResponse.newBuilder().setBody(chunk).setEndOfStream(endOfStream))).build();
  }

  /** The body in chunks of at most {@link #MAX_CHUNK_BYTES} (one empty chunk for an empty body). */
  static List<ByteString> chunks(ByteString body) {
    List<ByteString> out = new ArrayList<>();
    if (body.isEmpty()) {
      out.add(ByteString.EMPTY);
      return out;
    }
    for (int start = 0; start < body.size(); start += MAX_CHUNK_BYTES) {
      out.add(body.substring(start, Math.min(body.size(), start + MAX_CHUNK_BYTES)));
    }
    return out;
  }

  static ProcessingResponse requestTrailers() {
    return ProcessingResponse.newBuilder().setRequestTrailers(TrailersResponse.getDefaultInstance()).build();
  }

  static ProcessingResponse responseTrailers() {
    return ProcessingResponse.newBuilder().setResponseTrailers(TrailersResponse.getDefaultInstance()).build();
  }

  /** The answer to a refused request: its status, the OpenAI error object, the reason and Retry-After headers. */
  static ProcessingResponse immediate(FrontError error) {
    HeaderMutation.Builder headers = HeaderMutation.newBuilder()
        .addSetHeaders(set("content-type", "application/json"))
        .addSetHeaders(set(EppHeaders.REASON, error.code()));
    if (error.retryAfterSeconds() > 0) {
      headers.addSetHeaders(set("retry-after", Long.toString(error.retryAfterSeconds())));
    }
    StatusCode code = StatusCode.forNumber(error.status());
    return ProcessingResponse.newBuilder().setImmediateResponse(ImmediateResponse.newBuilder()
        .setStatus(HttpStatus.newBuilder().setCode(code == null ? StatusCode.InternalServerError : code))
        .setHeaders(headers)
        .setBody(ByteString.copyFrom(error.json()))
        .setDetails("kvrouter_" + error.code().toLowerCase(Locale.ROOT)))
        .build();
  }

  static String utf8(ByteString bytes) {
    return new String(bytes.toByteArray(), StandardCharsets.UTF_8);
  }
}

import COpenSSL

/// Incremental SHA-256 on OpenSSL's EVP interface. Not thread-safe: one hasher per stream.
public final class SHA256Hasher {
    private let context: OpaquePointer

    /// SHA-256, looked up in OpenSSL's providers once. With `EVP_sha256()` each digest looked it up again, under a lock
    /// (OpenSSL 3's implicit fetch): for the one-shot fingerprint of each stored token, that cost four times the hash
    /// (perf, 106k tokens: about 40 ms against 8 ms). Immutable once fetched, and shared by every thread.
    nonisolated(unsafe) static let algorithm: OpaquePointer = {
        guard let algorithm = EVP_MD_fetch(nil, "SHA256", nil) else { fatalError("OpenSSL has no SHA-256") }
        return algorithm
    }()

    public init() {
        guard let context = EVP_MD_CTX_new() else { fatalError("OpenSSL could not allocate a digest context") }
        self.context = context
        EVP_DigestInit_ex(context, Self.algorithm, nil)
    }

    deinit {
        EVP_MD_CTX_free(context)
    }

    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        EVP_DigestUpdate(context, base, bytes.count)
    }

    public func update(_ bytes: some Sequence<UInt8>) {
        let array = Array(bytes)
        array.withUnsafeBytes { update($0) }
    }

    /// The digest of everything so far; the hasher can go on afterwards.
    public func digestSoFar() -> [UInt8] {
        guard let copy = EVP_MD_CTX_new() else { fatalError("OpenSSL could not allocate a digest context") }
        defer { EVP_MD_CTX_free(copy) }
        EVP_MD_CTX_copy_ex(copy, context)
        var output = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        EVP_DigestFinal_ex(copy, &output, &length)
        return output
    }

    public func hexDigestSoFar() -> String {
        Hex.encode(digestSoFar())
    }

    /// One-shot (the side inputs fingerprint every stored token: a context per call would cost more than the hash).
    public static func digest(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        // In place when the bytes are contiguous (a native string's UTF-8 is): copying them cost an allocation a call.
        let done: Void? = bytes.withContiguousStorageIfAvailable { digest(UnsafeRawBufferPointer($0), into: &output) }
        if done == nil { Array(bytes).withUnsafeBytes { digest($0, into: &output) } }
        return output
    }

    private static func digest(_ input: UnsafeRawBufferPointer, into output: inout [UInt8]) {
        var length: UInt32 = 0
        _ = EVP_Digest(input.baseAddress, input.count, &output, &length, algorithm, nil)
    }

    public static func hexDigest(_ text: String) -> String {
        Hex.encode(digest(text.utf8))
    }
}

/// HMAC-SHA256 (Facebook's signed requests, idempotency keys).
public enum HMACSHA256 {
    public static func mac(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        key.withUnsafeBufferPointer { keyBuffer in
            message.withUnsafeBufferPointer { messageBuffer in
                _ = HMAC(SHA256Hasher.algorithm, keyBuffer.baseAddress, Int32(keyBuffer.count), messageBuffer.baseAddress, messageBuffer.count, &output, &length)
            }
        }
        return output
    }
}

public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        // Written straight into the string's storage: up to 7 bytes (14 digits) it is a small string, with no allocation.
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            var index = 0
            for byte in bytes {
                out[index] = digits[Int(byte >> 4)]
                out[index + 1] = digits[Int(byte & 0x0F)]
                index += 2
            }
            return index
        }
    }
}

/// The fingerprint under which a secret may appear in reports and the state store: 12 hex digits of SHA-256.
public enum SecretFingerprint {
    public static func of(_ secret: String) -> String {
        Hex.encode(SHA256Hasher.digest(secret.utf8).prefix(6))
    }
}

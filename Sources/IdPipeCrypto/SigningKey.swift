import COpenSSL

public struct CryptoError: Error, CustomStringConvertible, Equatable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }

    /// The reason OpenSSL gives for its last error, for messages (never contains key material).
    static func openSSL(_ what: String) -> CryptoError {
        let code = ERR_get_error()
        guard code != 0 else { return CryptoError(what) }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        ERR_clear_error()
        let reason = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return CryptoError("\(what) (\(reason))")
    }
}

/// A JWS algorithm and the private key it signs with.
public enum JWSAlgorithm: String, Sendable {
    /// ECDSA P-256 with SHA-256; Apple's client secret. The signature is r‖s (64 bytes), not DER.
    case es256 = "ES256"
    /// RSASSA-PKCS1-v1_5 with SHA-256; Google's service-account assertion.
    case rs256 = "RS256"
}

/// A private key loaded from PEM (PKCS#8 `BEGIN PRIVATE KEY`, as in Apple's `.p8` and Google's key files).
/// The key never leaves OpenSSL; `description` shows only the algorithm.
public final class SigningKey: @unchecked Sendable, CustomStringConvertible {
    // EVP_PKEY is reference counted and safe to sign with from several threads in OpenSSL 3.
    private let key: OpaquePointer
    public let algorithm: JWSAlgorithm

    public init(pem: String, algorithm: JWSAlgorithm) throws(CryptoError) {
        let bytes = Array(pem.utf8)
        let loaded: OpaquePointer? = bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let key = loaded else {
            ERR_clear_error()
            throw CryptoError("not a PEM private key (expected '-----BEGIN PRIVATE KEY-----')")
        }
        switch algorithm {
        case .es256:
            guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC, SigningKey.curveName(key) == "prime256v1" else {
                EVP_PKEY_free(key)
                throw CryptoError("ES256 needs a P-256 (prime256v1) EC key")
            }
        case .rs256:
            guard EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA, EVP_PKEY_get_bits(key) >= 2048 else {
                EVP_PKEY_free(key)
                throw CryptoError("RS256 needs an RSA key of at least 2048 bits")
            }
        }
        self.key = key
        self.algorithm = algorithm
    }

    deinit {
        EVP_PKEY_free(key)
    }

    public var description: String { "SigningKey(\(algorithm.rawValue))" }

    private static func curveName(_ key: OpaquePointer) -> String? {
        var buffer = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_utf8_string_param(key, "group", &buffer, buffer.count, &length) == 1 else { return nil }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Signs `message` with SHA-256; ES256 signatures come back in JOSE form (r‖s).
    public func sign(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw CryptoError("OpenSSL could not allocate a signing context") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else { throw .openSSL("signing failed") }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else { throw .openSSL("signing failed") }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else { throw .openSSL("signing failed") }
        signature.removeSubrange(length...)
        return algorithm == .es256 ? try SigningKey.joseSignature(fromDER: signature) : signature
    }

    /// OpenSSL's ECDSA signature is DER `SEQUENCE { r, s }`; JWS wants r and s as 32-byte big-endian each.
    static func joseSignature(fromDER der: [UInt8]) throws(CryptoError) -> [UInt8] {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let signature = parsed else { throw .openSSL("OpenSSL returned an ECDSA signature that is not DER") }
        defer { ECDSA_SIG_free(signature) }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(signature, &r, &s)
        var out = [UInt8](repeating: 0, count: 64)
        let written = out.withUnsafeMutableBufferPointer { buffer in
            (BN_bn2binpad(r, buffer.baseAddress, 32), BN_bn2binpad(s, buffer.baseAddress! + 32, 32))
        }
        guard written.0 == 32, written.1 == 32 else { throw CryptoError("an ECDSA signature component does not fit 32 bytes") }
        return out
    }
}

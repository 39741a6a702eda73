import COpenSSL
import Foundation

/// The sandbox's own JWT checking and key generation. Written apart from the client's signing code on purpose:
/// a bug shared by signer and verifier would cancel out and prove nothing.
enum SandboxCrypto {
    /// base64url (padding optional) → bytes.
    static func decodeBase64URL(_ text: Substring) -> Data? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard !standard.contains("=") else { return nil }
        switch standard.count % 4 {
        case 0: break
        case 2: standard += "=="
        case 3: standard += "="
        default: return nil
        }
        return Data(base64Encoded: standard)
    }

    struct VerifiedJWT {
        let header: SJSON
        let claims: SJSON
    }

    enum JWTFailure: Error, CustomStringConvertible {
        case malformed(String)
        case badSignature(String)

        var description: String {
            switch self {
            case .malformed(let why): "malformed JWT: \(why)"
            case .badSignature(let why): "signature check failed: \(why)"
            }
        }
    }

    /// Splits, decodes and verifies a compact JWS with `publicKeyPEM`, requiring header `alg` == `algorithm`.
    /// ES256 signatures must be the 64-byte JOSE form; a DER signature is refused as Apple refuses it.
    static func verify(_ token: String, algorithm: String, publicKeyPEM: String) throws(JWTFailure) -> VerifiedJWT {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("\(parts.count) parts, expected 3") }
        guard let headerData = decodeBase64URL(parts[0]), let claimsData = decodeBase64URL(parts[1]),
              let signature = decodeBase64URL(parts[2]) else { throw .malformed("a part is not base64url") }
        guard let header = try? SJSON.parse([UInt8](headerData)), header.members != nil,
              let claims = try? SJSON.parse([UInt8](claimsData)), claims.members != nil else {
            throw .malformed("header or claims are not JSON objects")
        }
        guard header["alg"]?.string == algorithm else { throw .malformed("alg is \(header["alg"]?.text ?? "missing"), expected \(algorithm)") }
        let signed = Data((parts[0] + "." + parts[1]).utf8)
        var der = [UInt8](signature)
        if algorithm == "ES256" {
            guard signature.count == 64 else { throw .badSignature("an ES256 signature is 64 bytes r||s, got \(signature.count) bytes") }
            guard let converted = derSignature(raw: [UInt8](signature)) else { throw .badSignature("cannot convert r||s") }
            der = converted
        }
        guard let key = loadPublicKey(publicKeyPEM) else { throw .badSignature("the sandbox's public key does not load") }
        defer { EVP_PKEY_free(key) }
        guard let context = EVP_MD_CTX_new() else { throw .badSignature("no context") }
        defer { EVP_MD_CTX_free(context) }
        let ok = signed.withUnsafeBytes { message in
            EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1
                && EVP_DigestVerify(context, der, der.count, message.bindMemory(to: UInt8.self).baseAddress, message.count) == 1
        }
        ERR_clear_error()
        guard ok else { throw .badSignature("does not verify with the configured public key") }
        return VerifiedJWT(header: header, claims: claims)
    }

    private static func derSignature(raw: [UInt8]) -> [UInt8]? {
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let r = BN_bin2bn(raw, 32, nil)
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        guard ECDSA_SIG_set0(signature, r, s) == 1 else { return nil }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { return nil }
        var out = [UInt8](repeating: 0, count: Int(length))
        out.withUnsafeMutableBufferPointer { buffer in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            _ = i2d_ECDSA_SIG(signature, &cursor)
        }
        return out
    }

    private static func loadPublicKey(_ pem: String) -> OpaquePointer? {
        let bytes = Array(pem.utf8)
        return bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }
    }

    /// A new key pair as (PKCS#8 private PEM, SubjectPublicKeyInfo PEM): P-256 for Apple, RSA-2048 for Google.
    static func generateKeyPair(ec: Bool) -> (privatePEM: String, publicPEM: String)? {
        guard let context = EVP_PKEY_CTX_new_id(ec ? EVP_PKEY_EC : EVP_PKEY_RSA, nil) else { return nil }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_keygen_init(context) == 1 else { return nil }
        if ec {
            guard EVP_PKEY_CTX_set_ec_paramgen_curve_nid(context, NID_X9_62_prime256v1) == 1 else { return nil }
        } else {
            guard EVP_PKEY_CTX_set_rsa_keygen_bits(context, 2048) == 1 else { return nil }
        }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen(context, &key) == 1, let key else { return nil }
        defer { EVP_PKEY_free(key) }
        guard let privatePEM = pem({ PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }),
              let publicPEM = pem({ PEM_write_bio_PUBKEY($0, key) }) else { return nil }
        return (privatePEM, publicPEM)
    }

    private static func pem(_ write: (OpaquePointer) -> Int32) -> String? {
        guard let bio = BIO_new(BIO_s_mem()) else { return nil }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { return nil }
        var pointer: UnsafeMutablePointer<CChar>?
        let length = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &pointer)
        guard length > 0, let pointer else { return nil }
        return String(decoding: UnsafeRawBufferPointer(start: pointer, count: Int(length)), as: UTF8.self)
    }

    static func sha256Hex(_ text: String) -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        let bytes = Array(text.utf8)
        _ = EVP_Digest(bytes, bytes.count, &digest, nil, EVP_sha256(), nil)
        return digest.map { String(format: "%02x", $0) }.joined()
    }

    /// `count` random bytes in lower-case hex: a Facebook app secret is 16 of them.
    static func randomHex(bytes count: Int) -> String {
        var bytes = [UInt8](repeating: 0, count: count)
        _ = RAND_bytes(&bytes, Int32(bytes.count))
        return bytes.map { String(format: "%02x", $0) }.joined()
    }

    static func randomToken(_ prefix: String) -> String {
        var bytes = [UInt8](repeating: 0, count: 18)
        _ = RAND_bytes(&bytes, Int32(bytes.count))
        return prefix + Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
    }
}

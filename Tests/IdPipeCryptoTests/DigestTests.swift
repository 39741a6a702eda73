import Testing
import IdPipeCrypto

@Suite struct DigestTests {
    @Test func sha256KnownAnswers() {
        #expect(SHA256Hasher.hexDigest("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256Hasher.hexDigest("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        // Bytes that are not contiguous take the copying way.
        #expect(Hex.encode(SHA256Hasher.digest("abc".utf8.lazy.map { $0 })) == SHA256Hasher.hexDigest("abc"))
    }

    /// The first 12 hex digits of SHA-256, for a native string and a bridged (non-ASCII) one.
    @Test func secretFingerprintIsTheDigestPrefix() {
        #expect(SecretFingerprint.of("abc") == "ba7816bf8f01")
        #expect(SecretFingerprint.of("") == "e3b0c44298fc")
        #expect(SecretFingerprint.of("tøken-é") == String(SHA256Hasher.hexDigest("tøken-é").prefix(12)))
    }

    @Test func digestSoFarLetsHashingGoOn() {
        let hasher = SHA256Hasher()
        hasher.update(Array("a".utf8))
        _ = hasher.digestSoFar()
        hasher.update(Array("bc".utf8))
        #expect(hasher.hexDigestSoFar() == SHA256Hasher.hexDigest("abc"))
    }

    @Test func hmacSHA256RFC4231Case2() {
        let mac = HMACSHA256.mac(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(Hex.encode(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }
}

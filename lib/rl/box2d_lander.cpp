// LunarLander-v3's bodies on Box2D 2.4 (Debian's libbox2d-dev), as Gymnasium builds them
// on pybox2d (Box2D 2.3): same shapes, densities, frictions, collision filters, joints
// and step settings. Box2D keeps everything in float32, as pybox2d does.
#include "rl/box2d_lander.h"

#include <box2d/box2d.h>

#include <new>

extern "C" {
#include "core/check.h"
}

namespace {

const float SCALE = 30.0f;
const double VIEWPORT_W = 600, VIEWPORT_H = 400;
const int LANDER_POLY[6][2] = {{-14, 17}, {-17, 0}, {-17, -10}, {17, -10}, {17, 0}, {14, 17}};
const double LEG_AWAY = 20, LEG_DOWN = 18, LEG_W = 2, LEG_H = 8, LEG_SPRING_TORQUE = 40;

// Gymnasium's ContactDetector: the body touching anything ends the game; a leg's contact
// flag is set when one of its contacts begins and cleared when one ends.
struct ContactFlags : public b2ContactListener {
    b2Body *lander = nullptr;
    b2Body *legs[2] = {nullptr, nullptr};
    bool game_over = false;
    bool leg_contact[2] = {false, false};

    void BeginContact(b2Contact *contact) override {
        b2Body *a = contact->GetFixtureA()->GetBody(), *b = contact->GetFixtureB()->GetBody();
        if (a == lander || b == lander) game_over = true;
        for (int i = 0; i < 2; i++)
            if (a == legs[i] || b == legs[i]) leg_contact[i] = true;
    }
    void EndContact(b2Contact *contact) override {
        b2Body *a = contact->GetFixtureA()->GetBody(), *b = contact->GetFixtureB()->GetBody();
        for (int i = 0; i < 2; i++)
            if (a == legs[i] || b == legs[i]) leg_contact[i] = false;
    }
};

}  // namespace

struct LanderWorld {
    b2World *world = nullptr;
    ContactFlags contacts;
};

extern "C" {

LanderWorld *lander_world_create(void) {
    LanderWorld *w = new (std::nothrow) LanderWorld();
    CHECK(w != nullptr, "lander_world_create: out of memory");
    return w;
}

void lander_world_destroy(LanderWorld *w) {
    if (!w) return;
    delete w->world;
    delete w;
}

void lander_world_build(LanderWorld *w, const double *terrain_x, const double *terrain_y, double force_x,
                        double force_y) {
    // A fresh world for every episode: an episode then depends only on its own random
    // numbers and actions (a reused world's broad-phase order carries over from the last).
    delete w->world;
    w->world = new b2World(b2Vec2(0.0f, -10.0f));
    w->contacts = ContactFlags();
    w->world->SetContactListener(&w->contacts);
    const double W = VIEWPORT_W / SCALE;

    b2BodyDef moon_def;  // static
    b2Body *moon = w->world->CreateBody(&moon_def);
    b2EdgeShape edge;
    edge.SetTwoSided(b2Vec2(0.0f, 0.0f), b2Vec2((float)W, 0.0f));
    b2FixtureDef edge_def;  // pybox2d's shapes=: the default fixture (friction 0.2)
    edge_def.shape = &edge;
    moon->CreateFixture(&edge_def);
    for (int i = 0; i < LANDER_TERRAIN_POINTS - 1; i++) {
        edge.SetTwoSided(b2Vec2((float)terrain_x[i], (float)terrain_y[i]),
                         b2Vec2((float)terrain_x[i + 1], (float)terrain_y[i + 1]));
        b2FixtureDef fd;
        fd.shape = &edge;
        fd.density = 0.0f;
        fd.friction = 0.1f;
        moon->CreateFixture(&fd);
    }

    const double initial_y = VIEWPORT_H / SCALE;
    b2BodyDef body_def;
    body_def.type = b2_dynamicBody;
    body_def.position.Set((float)(VIEWPORT_W / SCALE / 2), (float)initial_y);
    body_def.angle = 0.0f;
    b2Body *lander = w->world->CreateBody(&body_def);
    b2Vec2 corners[6];
    for (int k = 0; k < 6; k++)
        corners[k].Set((float)(LANDER_POLY[k][0] / (double)SCALE), (float)(LANDER_POLY[k][1] / (double)SCALE));
    b2PolygonShape hull;
    hull.Set(corners, 6);
    b2FixtureDef lander_fix;
    lander_fix.shape = &hull;
    lander_fix.density = 5.0f;
    lander_fix.friction = 0.1f;
    lander_fix.filter.categoryBits = 0x0010;
    lander_fix.filter.maskBits = 0x001;  // collide only with the ground
    lander_fix.restitution = 0.0f;
    lander->CreateFixture(&lander_fix);
    lander->ApplyForceToCenter(b2Vec2((float)force_x, (float)force_y), true);
    w->contacts.lander = lander;

    for (int side = 0; side < 2; side++) {
        const int i = side == 0 ? -1 : +1;
        b2BodyDef leg_def;
        leg_def.type = b2_dynamicBody;
        leg_def.position.Set((float)(VIEWPORT_W / SCALE / 2 - i * LEG_AWAY / SCALE), (float)initial_y);
        leg_def.angle = (float)(i * 0.05);
        b2Body *leg = w->world->CreateBody(&leg_def);
        b2PolygonShape box;
        box.SetAsBox((float)(LEG_W / SCALE), (float)(LEG_H / SCALE));
        b2FixtureDef leg_fix;  // friction: the default 0.2
        leg_fix.shape = &box;
        leg_fix.density = 1.0f;
        leg_fix.restitution = 0.0f;
        leg_fix.filter.categoryBits = 0x0020;
        leg_fix.filter.maskBits = 0x001;
        leg->CreateFixture(&leg_fix);

        b2RevoluteJointDef joint;
        joint.bodyA = lander;
        joint.bodyB = leg;
        joint.localAnchorA.Set(0.0f, 0.0f);
        joint.localAnchorB.Set((float)(i * LEG_AWAY / SCALE), (float)(LEG_DOWN / SCALE));
        joint.enableMotor = true;
        joint.enableLimit = true;
        joint.maxMotorTorque = (float)LEG_SPRING_TORQUE;
        joint.motorSpeed = (float)(+0.3 * i);  // low enough not to jump back into the sky
        if (i == -1) {
            joint.lowerAngle = (float)(+0.9 - 0.5);  // Gymnasium's "most esoteric numbers"
            joint.upperAngle = 0.9f;
        } else {
            joint.lowerAngle = -0.9f;
            joint.upperAngle = (float)(-0.9 + 0.5);
        }
        w->world->CreateJoint(&joint);
        w->contacts.legs[side] = leg;
    }
}

void lander_world_impulse(LanderWorld *w, double impulse_x, double impulse_y, double point_x, double point_y) {
    w->contacts.lander->ApplyLinearImpulse(b2Vec2((float)impulse_x, (float)impulse_y),
                                           b2Vec2((float)point_x, (float)point_y), true);
}

void lander_world_step(LanderWorld *w) { w->world->Step((float)(1.0 / 50), 6 * 30, 2 * 30); }

LanderBodyState lander_world_read(const LanderWorld *w) {
    const b2Body *b = w->contacts.lander;
    LanderBodyState s;
    s.x = b->GetPosition().x;
    s.y = b->GetPosition().y;
    s.vx = b->GetLinearVelocity().x;
    s.vy = b->GetLinearVelocity().y;
    s.angle = b->GetAngle();
    s.angular_velocity = b->GetAngularVelocity();
    s.leg_contact[0] = w->contacts.leg_contact[0];
    s.leg_contact[1] = w->contacts.leg_contact[1];
    s.body_contact = w->contacts.game_over;
    s.awake = b->IsAwake();
    return s;
}

void lander_world_polygons(const LanderWorld *w, LanderPolygon out[3]) {
    const b2Body *bodies[3] = {w->contacts.lander, w->contacts.legs[0], w->contacts.legs[1]};
    for (int k = 0; k < 3; k++) {
        const b2Fixture *f = bodies[k]->GetFixtureList();
        const b2PolygonShape *poly = static_cast<const b2PolygonShape *>(f->GetShape());
        const b2Transform &t = bodies[k]->GetTransform();
        out[k].count = poly->m_count;
        for (int v = 0; v < poly->m_count && v < 8; v++) {
            b2Vec2 p = b2Mul(t, poly->m_vertices[v]);
            out[k].xy[v][0] = p.x;
            out[k].xy[v][1] = p.y;
        }
    }
}

}  // extern "C"
